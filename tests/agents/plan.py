"""The task every program gets, and the scripted model's steps in it.

``make_repo`` writes a scratch git repository: a small ``shop`` package with a bug in
``shop/pricing.py`` that its unittest catches. The ``STEPS`` (neutral actions: read,
run, search, edit, write) read around the code, run the tests and see them fail, make a
fix that is wrong (the tests still fail), read again, fix it for good, see the tests
pass, and note the fix in the changelog: 30-odd tool calls, reading enough that fast
compaction has older results to cut. ``Script`` walks them: a program's player asks it
for the next step and maps it onto its own tools.

Each step can say what its result must hold (``expect``): that is how the test knows
the program really ran the command or made the edit, rather than the script going on
blindly.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.agents.script import Seen

TASK = ("The tests in this repository fail. Find out why, fix the code (not the tests), "
        "make sure the whole test suite passes, and add a line about the fix to "
        "CHANGELOG.md.")
TEST_COMMAND = "python3 -m unittest discover -s tests -t . 2>&1 | tail -n 15"

_MODULES = ("catalog", "stock", "orders", "customers", "shipping", "invoices", "reports",
            "returns")


def _module(name: str) -> str:
    """A module with enough code to read: a dataclass and a dozen small functions."""
    cls = name.capitalize().rstrip("s")
    lines = [f'"""The shop\'s {name}: records and the rules about them."""', "",
             "from __future__ import annotations", "", "from dataclasses import dataclass",
             "", "", "@dataclass", f"class {cls}:", "    key: str", "    quantity: int",
             "    note: str = \"\"", ""]
    for i in range(14):
        lines += ["", f"def {name}_rule_{i}(item: {cls}, limit: int = {10 + i}) -> bool:",
                  f'    """Whether the {name} record passes rule {i} (limit {10 + i})."""',
                  "    if item.quantity > limit:",
                  "        return False",
                  f"    return item.key.startswith(\"{name[:2]}\") or item.quantity % {i + 2} == 0",
                  ""]
    return "\n".join(lines) + "\n"


PRICING_BUGGY = '''"""Prices: a line's total, with the customer's discount and the tax."""

from __future__ import annotations

TAX_RATE = 0.2


def discounted(price_cents: int, percent: int) -> int:
    """The price after a discount of ``percent`` per cent, rounded down to a cent."""
    return price_cents - price_cents * percent


def line_total(price_cents: int, quantity: int, percent: int = 0) -> int:
    """A line of an order: quantity times the discounted price, tax included."""
    net = discounted(price_cents, percent) * quantity
    return net + int(net * TAX_RATE)
'''

# The first fix the model makes: it divides, but as a float, so the totals are off by a
# fraction of a cent and one test still fails.
PRICING_WRONG_FIX = ("    return price_cents - price_cents * percent",
                     "    return price_cents - price_cents * percent / 100")
PRICING_RIGHT_FIX = ("    return price_cents - price_cents * percent / 100",
                     "    return price_cents - price_cents * percent // 100")

TESTS = '''import unittest

from shop.pricing import discounted, line_total


class PricingTest(unittest.TestCase):
    def test_no_discount(self):
        self.assertEqual(discounted(1000, 0), 1000)

    def test_ten_per_cent(self):
        self.assertEqual(discounted(1000, 10), 900)

    def test_rounds_down_to_a_cent(self):
        self.assertEqual(discounted(999, 15), 850)
        self.assertIsInstance(discounted(999, 15), int)

    def test_line_total_with_tax(self):
        self.assertEqual(line_total(1000, 3, 10), 3240)


if __name__ == "__main__":
    unittest.main()
'''

README = """# shop

A toy shop back office: catalog, stock, orders, customers, shipping, invoices, reports,
returns, and pricing. Run the tests with `python3 -m unittest discover -s tests -t .`.
Prices are integer cents everywhere; a discount is a whole percentage.
"""

CHANGELOG = "# Changelog\n\n## Unreleased\n\n- Reports list returns by week.\n"
CHANGELOG_LINE = "- Fix discounts: a percentage, rounded down to a whole cent."


def make_repo(root: Path) -> Path:
    """The scratch repository at ``root`` (committed once), with its failing test."""
    files = {"README.md": README, "CHANGELOG.md": CHANGELOG, "shop/__init__.py": "",
             "shop/pricing.py": PRICING_BUGGY, "tests/__init__.py": "",
             "tests/test_pricing.py": TESTS}
    files.update({f"shop/{m}.py": _module(m) for m in _MODULES})
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git = ["git", "-c", "user.name=Scripted", "-c", "user.email=scripted@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "shop: first version"], cwd=root, check=True)
    return root


def suite_passes(root: Path) -> bool:
    done = subprocess.run(["python3", "-m", "unittest", "discover", "-s", "tests", "-t", "."],
                          cwd=root, capture_output=True, text=True)
    return done.returncode == 0


@dataclass(frozen=True)
class Step:
    """One neutral action. ``kind``: read (path), run (command), search (pattern),
    edit (path, old, new), write (path, text: the whole file). ``expect``: a string its
    result must hold."""

    kind: str
    path: str = ""
    command: str = ""
    old: str = ""
    new: str = ""
    text: str = ""
    expect: str = ""


def _steps() -> list[Step]:
    steps = [Step("run", command="git status --short && git log --oneline | head -n 3",
                  expect="first version"),
             Step("run", command="find . -name '*.py' -not -path './.git/*' | sort",
                  expect="shop/pricing.py"),
             Step("read", path="README.md", expect="integer cents"),
             Step("run", command=TEST_COMMAND, expect="FAILED"),
             Step("read", path="tests/test_pricing.py", expect="test_rounds_down_to_a_cent"),
             Step("read", path="shop/pricing.py", expect="def discounted"),
             Step("search", command="discounted", expect="shop/pricing.py")]
    for module in _MODULES:
        steps.append(Step("read", path=f"shop/{module}.py", expect=f"{module}_rule_13"))
    steps += [Step("search", command="percent", expect="pricing.py"),
              Step("run", command="wc -l shop/*.py", expect="total"),
              Step("edit", path="shop/pricing.py", old=PRICING_WRONG_FIX[0],
                   new=PRICING_WRONG_FIX[1]),
              Step("run", command=TEST_COMMAND, expect="FAILED"),
              Step("read", path="shop/pricing.py", expect="percent / 100"),
              Step("run", command="python3 -c 'from shop.pricing import discounted; "
                                  "print(discounted(999, 15))'", expect="849.15"),
              Step("edit", path="shop/pricing.py", old=PRICING_RIGHT_FIX[0],
                   new=PRICING_RIGHT_FIX[1]),
              Step("run", command=TEST_COMMAND, expect="OK"),
              Step("run", command="git diff --stat", expect="pricing.py"),
              Step("read", path="CHANGELOG.md", expect="Unreleased"),
              Step("write", path="CHANGELOG.md",
                   text=CHANGELOG.replace("## Unreleased\n\n",
                                          f"## Unreleased\n\n{CHANGELOG_LINE}\n")),
              Step("run", command="git diff CHANGELOG.md", expect="Fix discounts"),
              Step("search", command="percent // 100", expect="pricing.py"),
              Step("run", command=TEST_COMMAND, expect="OK"),
              Step("run", command="git status --short", expect="pricing.py")]
    return steps


STEPS: tuple[Step, ...] = tuple(_steps())
FINAL = ("Fixed: `discounted` multiplied by the percentage instead of taking a share of "
         "it; it now takes `percent // 100` of the price in whole cents, the suite passes, "
         "and CHANGELOG.md says so.")


@dataclass
class Script:
    """Where the scripted model is in ``STEPS``. ``advance`` is told the results a
    request carried; it moves on only when they answer the call it made last (a retried
    or side request repeats nothing). ``mismatches`` lists results that did not hold
    what their step expected."""

    steps: tuple[Step, ...] = STEPS
    at: int = 0
    pending: str | None = None  # the call id awaiting its result
    pending_step: Step | None = None
    expanded: str | None = None  # the handle read back, once
    expansion: str = ""  # what the expand tool gave back
    mismatches: list[str] = field(default_factory=list)
    done: bool = False

    def advance(self, seen: Seen) -> None:
        if self.pending is None:
            return
        for result in seen.results:
            if result.call_id != self.pending:
                continue
            step = self.pending_step
            if step is None:  # the expand call
                self.expansion = result.text
            elif step.expect and step.expect not in result.text:
                self.mismatches.append(f"{step.kind} {step.path or step.command}: expected "
                                       f"{step.expect!r} in {result.text[:400]!r}")
            self.pending, self.pending_step = None, None
            return

    def next_step(self) -> Step | None:
        """The step to take now (None: the work is done), and marks it taken."""
        if self.at >= len(self.steps):
            self.done = True
            return None
        step = self.steps[self.at]
        self.at += 1
        self.pending_step = step
        return step

    def wants_expand(self, seen: Seen) -> str | None:
        """A handle to read back: once, the first time the proxy offers the tool."""
        from tests.agents.script import EXPAND_TOOL
        if self.expanded is not None or EXPAND_TOOL not in seen.tools or not seen.handles():
            return None
        self.expanded = seen.handles()[0]
        self.pending_step = None
        return self.expanded
