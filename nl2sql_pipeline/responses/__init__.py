"""How a system responded when the right response is not a query: refusals and clarifying questions.

refusal        the rule that reads a reply's text as an explicit refusal
"""
