"""The constructs the Punctual stack is made of."""
