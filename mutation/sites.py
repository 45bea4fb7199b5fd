"""Where a single-token mutant can be made in a module's decision logic, and what it becomes.

A site is one token of the source (an operator, a keyword, a literal, a builtin's name) and one
replacement: `<` -> `<=`, `and` -> `or`, `not x` -> `x`, `True` -> `False`, `3` -> `4`, `min` -> `max`,
`break` -> `continue`. Read from the AST (so only code, never comments) with each token located by
`tokenize`; left out is what is not decision logic: strings and f-strings (messages), type annotations,
docstrings, `raise` statements (their messages; the condition that raises is in the `if` above) and
`if TYPE_CHECKING:` blocks.
"""

from __future__ import annotations

import ast
import bisect
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

# Comparison and arithmetic swaps: each token and what it becomes (the classic boundary and sign faults).
_COMPARE = {
    ast.Lt: ("<", ("<=", ">")),
    ast.LtE: ("<=", ("<", ">")),
    ast.Gt: (">", (">=", "<")),
    ast.GtE: (">=", (">", "<")),
    ast.Eq: ("==", ("!=",)),
    ast.NotEq: ("!=", ("==",)),
    ast.Is: ("is", ("is not",)),
    ast.IsNot: ("is not", ("is",)),
    ast.In: ("in", ("not in",)),
    ast.NotIn: ("not in", ("in",)),
}
_BINARY = {
    ast.Add: ("+", ("-",)),
    ast.Sub: ("-", ("+",)),
    ast.Mult: ("*", ("/",)),
    ast.Div: ("/", ("*", "//")),
    ast.FloorDiv: ("//", ("/", "*")),
    ast.Mod: ("%", ("//",)),
    ast.BitOr: ("|", ("&",)),
    ast.BitAnd: ("&", ("|",)),
}
_BOOLEAN = {ast.And: ("and", "or"), ast.Or: ("or", "and")}
_BUILTIN_SWAPS = {"min": "max", "max": "min", "any": "all", "all": "any"}


@dataclass(frozen=True)
class Site:
    """One mutant: replace `original` at (line, col)..(end_line, end_col) of `path` by `replacement`."""

    path: str  # relative to the project, with '/'
    line: int
    col: int
    end_line: int
    end_col: int
    original: str
    replacement: str
    kind: str

    @property
    def key(self) -> str:
        """Stable while the line's text does not change: `path:line:col: original -> replacement`."""
        return f"{self.path}:{self.line}:{self.col}: {self.original} -> {self.replacement}"

    def apply(self, source: str) -> str:
        lines = source.splitlines(keepends=True)
        start = sum(len(text) for text in lines[: self.line - 1]) + _char_col(lines[self.line - 1], self.col)
        end = sum(len(text) for text in lines[: self.end_line - 1]) + _char_col(
            lines[self.end_line - 1], self.end_col
        )
        return source[:start] + self.replacement + source[end:]


def _char_col(line: str, byte_col: int) -> int:
    """AST columns count UTF-8 bytes; string slicing counts characters."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


class _Tokens:
    """The file's significant tokens with their byte spans, to find the operator between two operands."""

    def __init__(self, source: str) -> None:
        skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
        self.lines = source.splitlines(keepends=True)
        self.spans = [
            (self._byte_pos(token.start), self._byte_pos(token.end), token.string)
            for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if token.type not in skip
        ]
        self.starts = [begin for begin, _, _ in self.spans]

    def _byte_pos(self, position: tuple[int, int]) -> tuple[int, int]:
        row, col = position
        return row, len(self.lines[row - 1][:col].encode("utf-8")) if row <= len(self.lines) else col

    def between(
        self, start: tuple[int, int], end: tuple[int, int]
    ) -> list[tuple[tuple[int, int], tuple[int, int], str]]:
        """Tokens lying wholly in [start, end) (positions as (line, byte column))."""
        found = []
        for begin, finish, text in self.spans[bisect.bisect_left(self.starts, start) :]:
            if begin >= end:
                break
            if finish <= end:
                found.append((begin, finish, text))
        return found


def _end(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0


def _start(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


class _Finder(ast.NodeVisitor):
    def __init__(self, path: str, source: str) -> None:
        self.path = path
        self.tokens = _Tokens(source)
        self.sites: list[Site] = []

    # --- what is not decision logic

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:  # f-strings: messages
        return

    def visit_Raise(self, node: ast.Raise) -> None:
        return

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.generic_visit(node)

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        ):
            return
        self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> None:  # a parameter's annotation
        return

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for item in [*node.decorator_list, node.args, *node.body]:
            self.visit(item)

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_arguments(self, node: ast.arguments) -> None:
        for default in [*node.defaults, *(d for d in node.kw_defaults if d is not None)]:
            self.visit(default)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)

    # --- sites

    def _operator(
        self, left: ast.AST, right: ast.AST, text: str, replacements: tuple[str, ...], kind: str
    ) -> None:
        tokens = self.tokens.between(_end(left), _start(right))
        words = text.split()
        for index in range(len(tokens) - len(words) + 1):
            window = tokens[index : index + len(words)]
            if [text for _, _, text in window] == words:
                (line, col), (end_line, end_col) = window[0][0], window[-1][1]
                for replacement in replacements:
                    self.sites.append(Site(self.path, line, col, end_line, end_col, text, replacement, kind))
                return

    def visit_Compare(self, node: ast.Compare) -> None:
        left: ast.AST = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            text, replacements = _COMPARE[type(op)]
            self._operator(left, right, text, replacements, "compare")
            left = right
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if type(node.op) in _BINARY:
            text, replacements = _BINARY[type(node.op)]
            self._operator(node.left, node.right, text, replacements, "arithmetic")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if type(node.op) in _BINARY:
            text, replacements = _BINARY[type(node.op)]
            self._operator(
                node.target, node.value, text + "=", tuple(r + "=" for r in replacements), "arithmetic"
            )
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        text, replacement = _BOOLEAN[type(node.op)]
        for left, right in zip(node.values, node.values[1:], strict=False):
            self._operator(left, right, text, (replacement,), "boolean")
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            (line, col) = _start(node)
            tokens = self.tokens.between((line, col), _start(node.operand))
            if tokens and tokens[0][2] == "not":
                end = tokens[0][1]
                self.sites.append(Site(self.path, line, col, end[0], end[1], "not", "", "negation"))
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value
        line, col = _start(node)
        end_line, end_col = _end(node)
        if isinstance(value, bool):
            flipped = "False" if value else "True"
            self.sites.append(Site(self.path, line, col, end_line, end_col, str(value), flipped, "constant"))
        elif isinstance(value, int):
            original = self.tokens.lines[line - 1].encode("utf-8")[col:end_col].decode("utf-8")
            replacements = {value + 1, 0 if value != 0 else 1} if value in (0, 1) else {value + 1}
            for number in sorted(replacements - {value}):
                self.sites.append(
                    Site(self.path, line, col, end_line, end_col, original, str(number), "number")
                )

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in _BUILTIN_SWAPS:
            line, col = _start(func)
            end_line, end_col = _end(func)
            self.sites.append(
                Site(self.path, line, col, end_line, end_col, func.id, _BUILTIN_SWAPS[func.id], "builtin")
            )
        self.generic_visit(node)

    def visit_Break(self, node: ast.Break) -> None:
        line, col = _start(node)
        self.sites.append(Site(self.path, line, col, *_end(node), "break", "continue", "loop"))

    def visit_Continue(self, node: ast.Continue) -> None:
        line, col = _start(node)
        self.sites.append(Site(self.path, line, col, *_end(node), "continue", "break", "loop"))


def find_sites(project: Path, relative: str) -> list[Site]:
    """Every single-token mutant of one module (`parses` tells whether a mutant's source still parses)."""
    source = (project / relative).read_text(encoding="utf-8")
    finder = _Finder(relative, source)
    finder.visit(ast.parse(source))
    return sorted(set(finder.sites), key=lambda s: (s.line, s.col, s.replacement))


def parses(site: Site, source: str) -> bool:
    try:
        ast.parse(site.apply(source))
    except SyntaxError:
        return False
    return True
