"""Judge prompts as data: one file per prompt, one format, one loader (:mod:`.loader`).

Add a prompt by adding a file ``recjudge_utils/prompts/<folder>/<name>.md`` (see ``README.md`` here for the
format); ``load_prompt("<folder>/<name>")`` reads it and checks its slots, and its content hash goes into the
cache key of every request rendered from it.
"""

from recjudge_utils.prompts.loader import (
    Message,
    PromptFileError,
    PromptTemplate,
    list_prompts,
    load_prompt,
    parse_prompt,
)

__all__ = ["Message", "PromptFileError", "PromptTemplate", "list_prompts", "load_prompt", "parse_prompt"]
