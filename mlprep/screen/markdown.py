"""Markdown as the screens render it (a prompt, a story's sample answer): rich's, except that a code block's
lines stay whole. A line wider than the screen runs on and the terminal folds it, so that code copied from
the screen is the code as written (rich would wrap it, breaking a docstring's indentation and a call).
Importing rich's Markdown is slow: the quick commands import this module only to render, and cache that."""

from __future__ import annotations

from typing import Any

from rich.markdown import CodeBlock, Markdown
from rich.syntax import Syntax
from rich.text import Text


class WholeLineCode(CodeBlock):
    def __rich_console__(self, console: Any, options: Any) -> Any:
        code = str(self.text).rstrip()
        lines = Syntax(code, self.lexer_name, theme=self.theme).highlight(code).split("\n", allow_blank=True)
        block = Text("\n").join(Text("  ").append_text(line) for line in lines)
        block.no_wrap, block.overflow, block.end = True, "ignore", "\n"
        yield Text()
        yield block
        yield Text()


class Prompt(Markdown):
    elements = {**Markdown.elements, "fence": WholeLineCode, "code_block": WholeLineCode}


def markdown(text: str) -> Markdown:
    return Prompt(text)
