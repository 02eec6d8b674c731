"""A failure's series as a picture: the plain data a check's details carry under "series" (see
mlprep.grading.Series) drawn as a few lines of rich Text, one sparkline per named line on a shared
scale, that fit a terminal width (down to 60 columns):

      loss scale after each step: 8192 to 65536, log scale; step 0 to 8
      yours     █████████
      expected  █▆▃▁▁▃▁▁▃
                 ^ step 1: yours 65536, expected 32768

Pure rich Text, no plotting library: a sparkline is eight block characters, and a curve of a few
dozen points is what a failure needs to show, not axes and ticks.
"""

from __future__ import annotations

import math
from typing import Any

from rich.text import Text

BLOCKS = "▁▂▃▄▅▆▇█"
INF, NAN, NOT_POSITIVE = "!", "?", "_"  # points a sparkline cannot place: inf or -inf, NaN, zero or below on a log scale
MIN_PLOT_COLUMNS = 8
NAME_COLUMNS = 12  # longer line names are cut


def series_text(series: Any, width: int = 80, *, indent: str = "  ") -> Text:
    """The series as lines of Text, none wider than `width`: a title line with the values' range and
    the x range, a sparkline per line (shared scale, log when the series asks), and, where the lines
    differ, a ^ under the first point where they do, with their values there. A point that is inf is
    drawn as "!", NaN as "?", zero or below on a log scale as "_" (a legend says so); a point a line
    lacks is blank. A series too malformed to read gives an empty Text."""
    lines = _lines(series)
    if not lines:
        return Text()
    n = max(len(points) for points in lines.values())
    x = series.get("x") if isinstance(series.get("x"), list) else []
    x = [*x[:n], *range(len(x), n)]
    x_label = str(series.get("x_label") or "point")
    log_scale = bool(series.get("log_scale"))

    values = [_number(p) for points in lines.values() for p in points]
    placed = [v for v in values if v is not None and math.isfinite(v) and (v > 0 or not log_scale)]
    low, high = (min(placed), max(placed)) if placed else (0.0, 0.0)

    name_width = min(max(len(name) for name in lines), NAME_COLUMNS)
    margin = len(indent) + name_width + 2
    plot = max(width - margin, MIN_PLOT_COLUMNS)
    first = _first_difference(lines)
    columns = _columns(n, plot, first)

    text = Text()
    value_range = ("no finite values" if not placed else f"{_fmt(low)}" if low == high else f"{_fmt(low)} to {_fmt(high)}") + (", log scale" if log_scale else "")
    ranges = f"{value_range}; {x_label} {_fmt(x[0])} to {_fmt(x[-1])}" if n > 1 else f"{value_range}; {x_label} {_fmt(x[0])}"
    note = f" ({series['note']})" if isinstance(series.get("note"), str) and series["note"] else ""
    title = str(series.get("title") or "series")
    line = f"{indent}{title}: {ranges}"
    if len(line) <= width:
        text.append(line + note if len(line + note) <= width else line, style="bold")
    else:  # the ranges on a line of their own
        text.append(_fit(indent + title, width), style="bold")
        text.append("\n" + _fit(indent + ranges + note if len(indent + ranges + note) <= width else indent + ranges, width), style="dim")

    used: set[str] = set()
    for number, (name, points) in enumerate(lines.items()):
        text.append("\n" + indent)
        text.append(_fit(name, name_width).ljust(name_width) + "  ", style="dim")
        for index in columns:
            glyph = _glyph(points[index] if index < len(points) else None, low, high, log_scale)
            if glyph in (INF, NAN, NOT_POSITIVE):
                used.add(glyph)
                text.append(glyph, style="bold yellow")
            else:
                text.append(glyph, style="" if number == 0 else "cyan")

    if first is not None:
        column = columns.index(first)
        at = ", ".join(f"{_fit(name, NAME_COLUMNS)} {_point_text(points[first] if first < len(points) else None)}" for name, points in lines.items())
        label = f"{x_label} {_fmt(x[first])}: {at}"
        caret = margin + column
        text.append("\n")
        if caret + 2 + len(label) <= width:
            text.append(" " * caret)
            text.append("^", style="bold red")
            text.append(" " + label)
        elif len(label) + 1 <= caret:
            text.append(" " * (caret - len(label) - 1) + label + " ")
            text.append("^", style="bold red")
        else:
            text.append(" " * caret)
            text.append("^", style="bold red")
            text.append(_fit(" " + label, width - caret - 1))

    if used:
        legend = "  ".join(f"{glyph} {meaning}" for glyph, meaning in ((INF, "inf"), (NAN, "NaN"), (NOT_POSITIVE, "zero or below")) if glyph in used)
        text.append("\n" + _fit(indent + legend, width), style="dim")
    return text


def _lines(series: Any) -> dict[str, list[Any]]:
    """The named lines of a series' plain data (empty when there are none to draw)."""
    if not isinstance(series, dict) or not isinstance(series.get("lines"), dict):
        return {}
    lines = {str(name): points for name, points in series["lines"].items() if isinstance(points, list)}
    return lines if any(lines.values()) else {}


def _number(point: Any) -> float | None:
    """A point as a float (inf and NaN included, from their JSON strings), or None where there is none."""
    if isinstance(point, bool) or point is None:
        return None
    if isinstance(point, (int, float)):
        return float(point)
    return {"inf": math.inf, "-inf": -math.inf, "NaN": math.nan}.get(point) if isinstance(point, str) else None


def _first_difference(lines: dict[str, list[Any]]) -> int | None:
    """The first index where the lines' points are not all the same (NaN the same as NaN)."""
    n = max(len(points) for points in lines.values())
    for index in range(n):
        points = {_key(points[index] if index < len(points) else None) for points in lines.values()}
        if len(points) > 1:
            return index
    return None


def _key(point: Any) -> Any:
    number = _number(point)
    return "NaN" if number is not None and math.isnan(number) else number


def _columns(n: int, plot: int, first: int | None) -> list[int]:
    """The index of the point each column of the sparkline shows: every point when they fit,
    else the first of each column's share of them, or the first difference in the column holding it."""
    if n <= plot:
        return list(range(n))
    columns = []
    for column in range(plot):
        start, stop = column * n // plot, (column + 1) * n // plot
        columns.append(first if first is not None and start <= first < stop else start)
    return columns


def _glyph(point: Any, low: float, high: float, log_scale: bool) -> str:
    value = _number(point)
    if value is None:
        return " "
    if math.isnan(value):
        return NAN
    if math.isinf(value):
        return INF
    if log_scale and value <= 0:
        return NOT_POSITIVE
    if high == low:
        return BLOCKS[len(BLOCKS) // 2 - 1]
    position = (math.log(value) - math.log(low)) / (math.log(high) - math.log(low)) if log_scale else (value - low) / (high - low)
    return BLOCKS[min(max(round(position * (len(BLOCKS) - 1)), 0), len(BLOCKS) - 1)]


def _fmt(value: Any) -> str:
    number = _number(value)
    if number is None:
        return str(value)
    if not math.isfinite(number):
        return "NaN" if math.isnan(number) else "inf" if number > 0 else "-inf"
    if math.isfinite(number) and number == int(number) and abs(number) < 1e15:
        return str(int(number))
    return f"{number:.6g}"


def _point_text(point: Any) -> str:
    return "no point" if _number(point) is None else _fmt(point)


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(width - 1, 0)] + "…"
