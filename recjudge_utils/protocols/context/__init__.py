"""What each paper's judge is shown about a user and the items: one module per paper's context.

``serendipity`` (item and history text), ``arena`` (role-play profile and recent history), ``saer`` (customer
context with named substitutes, and the numbered list).
"""
