"""Text actions: agents that act in their text and hear back in user messages.

Many agents never use a tools API. mini-swe-agent and SWE-agent in text mode
write a shell command in a fenced block, ReAct agents an ``Action:`` line, step
agents a JSON object with a ``kind``; the harness runs it and sends what came
back as the next user message. Read as plain chat, every such result would be
"the user" and stay forever, and the agent would seem never to have called a
tool. Read here, each (action, observation) pair is a call and its result, and
each edit block an assistant writes (Aider's SEARCH/REPLACE) an edit of its file.

An observation is recognised by the shape harnesses give it (a return code tag,
which some harnesses put after the command line they ran in an ``<args>`` tag, an
``Observation:`` label, a JSON step whose kind names an observation, a result or a
failure, a shell prompt at its end, the report of an edit applied or refused),
never by length or guesswork: a user message that is not plainly a tool's
output is the user's, and the user's words are kept.

Harnesses this module was never shown have shapes of their own, so two readings
are learned from the run itself rather than from a list of names. An action
written as markup (``<read_file><path>a.py</path></read_file>``, as Cline, Roo
Code and Kilo Code write theirs) is a call named by its tag with its child tags
as arguments. And a harness opens every result the same way (``[read_file for
'a.py'] Result:``): a first line whose skeleton (its punctuation, with words and
quoted text standing as placeholders) opens several of the user messages that
follow the agent's turns in this run is that harness's result shape. A skeleton
must open with markup or a bracket: a customer's "Yes, thanks." repeated is
still the customer.

Some harnesses take commands from the user too: in Aider's chat the user types
``/run pytest``, ``/ls`` or ``/add file.py`` and what the command printed comes
back as the next user message. Such a command line and its output are a call and
its result as well, the user's words being the command itself; an output is taken
for one only when it has the shape of a command's output (several lines, or one of
the console's own replies), so a request the user typed next is never read as one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.engine import jsontext
from app.engine.memo import CacheUsage, Memo, combined
from app.engine.reading.tags import Element, elements, fenced_blocks, line_blocks
from app.engine.transcript.model import Message

# How harnesses open the text they send back.
_OBSERVATION_START = re.compile(
    r"\s*(?:<returncode>|<output>|<observation>|(?:observation|tool output|tool result"
    r"|execution result|command output)\s*:|\{\s*\"kind\"\s*:\s*\"[\w.-]*"
    r"(?:observation|_result|_failure|_error)\")"
    # What a harness says of the edit blocks it applied or refused (Aider's).
    r"|\s*(?:applied edit to |the llm did not conform to the edit format|unable to write file "
    r"|allow (?:creation of new file|edits to) |committing [^\n]{1,300}? before applying edits"
    # And its question before it runs the shell commands a reply suggested; what it sends
    # the model of a command it ran ("Output from CMD", and "I ran this command:" for
    # /run and the tests it runs after an edit).
    r"|run shell commands\? \(y\)es/\(n\)o|output from [^\n]+\n|i ran this command:\s*\n)",
    re.IGNORECASE)
# And how they close it: the shell's prompt after what ran (SWE-agent's
# "(Current directory: /repo)\nbash-$").
_OBSERVATION_END = re.compile(r"\(Current directory: [^\n]*\)\s*\n\s*[\w.-]*[$#]\s*\Z")
_END_CHARS = 200
# A harness that echoes the command it ran (mini-swe-agent in a container:
# "<args>\n['docker', 'exec', ...]\n</args>\n<returncode>...") before its return code.
_ECHOED_ARGS = re.compile(r"\s*<args>")
_ECHO_CLOSE = "</args>"
_AFTER_ECHO = re.compile(r"\s*<returncode>")

# A command typed at a harness's console (Aider's /run, /ls, /add...), a line of its own.
_CONSOLE = re.compile(r"/([a-z][\w-]*)(?:[ \t]+([^\n]*?))?[ \t]*")
# Commands whose argument is a shell command line, and the prefix it runs with.
_SHELL_COMMANDS = {"run": "", "test": "", "lint": "", "git": "git "}
# A console's own one-line replies; an output of several lines is a command's too.
_CONSOLE_REPLY = re.compile(
    r"\s*(?:added |removed |dropping |commit [0-9a-f]{7}|no files matched|no changes"
    r"|invalid command|head is|approximate context|please provide)", re.IGNORECASE)

# An action as markup: an element at the start of a line whose content holds elements
# of its own (its parameters), outside fenced code (see ``tags.elements``).
# A line wholly in brackets beside a markup action is the harness's note on it
# ("[Response interrupted by a tool use result. ...]"), not the agent's thought.
_BRACKETED = re.compile(r"^[ \t]*\[[^\n]*\][ \t]*$", re.MULTILINE)
# A first line's skeleton: quoted text, then words (paths and numbers included), stand
# as placeholders; it must open with markup or a bracket, and be short (a result's
# opening line), to be a harness's shape.
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`")
_WORDS = re.compile(r"[\w./@~+-]+")
_STRUCTURE = frozenset("[]<>{}|")
# A block on lines of its own: an opening tag alone on its line, through its closing tag
# (see ``tags.line_blocks``).
# Lines inside a block, at least, for it to be a harness's boilerplate.
_BLOCK_LINES = 4
# A block repeats the one before when this share of its lines are that block's lines.
ALIKE_SHARE = 0.5
_LINE_CHARS = 2000
_SKELETON_SIGNS = 16
# Words a harness's own sentence repeats at the start of every result: enough that
# people, who vary theirs, do not write the same ones three times over.
_OPENING_WORDS = 6
_BODY_CHARS = 200
_USER_WORD = re.compile(r"\buser'?s?\b", re.IGNORECASE)
# A shape is the run's result shape once it opens this many of the messages after the
# agent's turns, and this share of them (a harness may give each kind of tool its own).
_LEARNED_AT_LEAST = 3
_LEARNED_SHARE = 0.2
# An action that asks the user something: what comes back is the user's answer, kept as
# the user's words even in the harness's result shape.
_ASKS = re.compile(r"ask|question|follow_?up|clarif", re.IGNORECASE)
_SHELLS = frozenset({"", "bash", "sh", "shell", "console", "zsh"})
# A fence a harness names for its commands with a shell's name among its words
# (mini-swe-agent's text mode writes ```mswea_bash_command): a shell command too.
_SHELL_WORD = re.compile(r"(?:^|[_-])(?:bash|sh|shell|zsh)(?:[_-]|$)")
_ACTION_LINE = re.compile(r"^[ \t]*(?:Action|ACTION)[ \t]*:[ \t]*(.+)", re.MULTILINE | re.DOTALL)
_VERB = re.compile(r"[A-Za-z_]\w*")


# The id a call lifted from markup starts with (see ``lifting``): its note shows it as the
# agent wrote it.
MARKUP_CALL = "cs_text_markup_"


@dataclass(frozen=True, slots=True)
class TextAction:
    """What an assistant message did, read from its text: a call in all but the wire."""

    name: str
    arguments: str  # JSON text, as a tool call carries it
    thought: str  # the text around the action: the agent's reasoning
    markup: bool = False  # written as an element with a child per argument


def is_observation(text: str) -> bool:
    """Whether ``text`` has the shape of what a harness sends back after an action."""
    return bool(_OBSERVATION_START.match(text) or _echoed(text)
                or _OBSERVATION_END.search(text[-_END_CHARS:]))


def _echoed(text: str) -> bool:
    """An ``<args>`` echo of the command, then the return code tag."""
    if not _ECHOED_ARGS.match(text):
        return False
    close = text.find(_ECHO_CLOSE)
    return close >= 0 and _AFTER_ECHO.match(text, close + len(_ECHO_CLOSE)) is not None


def skeleton(text: str) -> str | None:
    """The shape of a text's first line: its first sign and its last three, with words
    and quoted text as placeholders (``[read_file for 'a.py'] Result:`` and
    ``[search_files for 'x' in '*.ts'] Result:`` both ``[…]w:``); None when the line has
    no markup or bracket at its start to be a harness's, or reads as prose."""
    line = text.lstrip().partition("\n")[0][:_LINE_CHARS]
    signs = _WORDS.sub("w", _QUOTED.sub("q", line)).replace(" ", "")
    # A harness opens with its markup or bracket; people open with words, and run on.
    if not signs or signs[0] not in _STRUCTURE or "w" not in signs \
            or len(signs) > _SKELETON_SIGNS:
        return None
    return signs if len(signs) <= 4 else f"{signs[0]}…{signs[-3:]}"


def opening(text: str) -> str | None:
    """A text's first words, when its first line has enough of them to be a sentence a
    harness repeats (``The browser action has been executed.``) and a body follows."""
    first, newline, rest = text.strip().partition("\n")
    words = first[:_LINE_CHARS].split()
    # A result has a body below its opening sentence; a person's reply is a paragraph.
    if len(words) < _OPENING_WORDS or not newline or len(rest) < _BODY_CHARS:
        return None
    shown = " ".join(words[:_OPENING_WORDS])
    # "The user provided the following feedback:": a harness passing on the user's words
    # is the user speaking.
    return None if _USER_WORD.search(shown) else shown


def shapes(text: str) -> tuple[str, ...]:
    """What a text may share with the other results of its run: its skeleton and its
    opening words."""
    found = (skeleton(text), opening(text))
    return tuple(f"{kind}:{shape}" for kind, shape in zip("so", found, strict=True)
                 if shape is not None)


# A block of some tag: the text it is in and its place among that text's blocks of the
# tag; two of them, of one tag, the earlier first.
Block = tuple[str, int]
BlockPair = tuple[str, Block, Block]
# Each block of a text: its tag and the fingerprints of its lines (see ``tagged_blocks``).
Blocks = tuple[tuple[str, frozenset[int]], ...]


def tagged_blocks(text: str) -> Blocks:
    """The blocks a text holds on lines of their own (``<environment_details>`` ...
    ``</environment_details>``), each as its tag and the set of its lines' fingerprints
    (their 64-bit hashes, as the memos keep theirs: see ``memo``): a harness may append
    the same block, a line or two changed, to every result, and only which lines two
    blocks share is asked."""
    if "</" not in text:
        return ()
    found = []
    for tag, start, end in line_blocks(text):
        inner = [line for line in text[start:end].splitlines()[1:-1] if line.strip()]
        # A return code or a one-line output is a fact of its own result, not boilerplate.
        if len(inner) >= _BLOCK_LINES:
            found.append((tag, frozenset([hash(line) for line in inner])))
    return tuple(found)


def repeats(earlier: frozenset[int], later: frozenset[int]) -> bool:
    """Whether a block repeats the one before it: ALIKE_SHARE of its lines are that
    block's lines."""
    return len(earlier & later) >= ALIKE_SHARE * len(later)


def without_blocks(text: str, tags: frozenset[str]) -> str:
    """``text`` without its blocks of these tags."""
    kept: list[str] = []
    at = 0
    for tag, start, end in line_blocks(text):
        if tag in tags:
            kept.append(text[at:start])
            at = end
    if not at:
        return text.rstrip()
    kept.append(text[at:])
    return "".join(kept).rstrip()


def _without_blocks(key: tuple[str, frozenset[str]]) -> str:
    return without_blocks(*key)


def console_command(text: str) -> TextAction | None:
    """A command typed at the console as a call: a shell command line for the commands
    that run one (``/run pytest`` runs ``pytest``), else the command and its argument."""
    found = _CONSOLE.fullmatch(text.strip())
    if found is None:
        return None
    name, rest = found.group(1), found.group(2) or ""
    prefix = _SHELL_COMMANDS.get(name)
    if prefix is not None and rest:
        return TextAction("bash", json.dumps({"command": prefix + rest}, ensure_ascii=False), "")
    return TextAction(name, json.dumps({"argument": rest}, ensure_ascii=False), "")


def is_console_output(text: str) -> bool:
    """Whether a user message after a console command is what the command printed."""
    stripped = text.strip()
    if not stripped or _CONSOLE.fullmatch(stripped):
        return False
    return "\n" in stripped or _CONSOLE_REPLY.match(stripped) is not None


def _json_step(text: str) -> TextAction | None:
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        value = jsontext.loads(stripped)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("kind"), str):
        return None
    return TextAction(value["kind"], stripped, "")


def fenced_code(text: str) -> str:
    """The code of every fenced block in ``text``, joined: what an agent that answers in
    prose wrote as code (a chat reply's snippet, a whole file)."""
    if "```" not in text:
        return ""
    return "\n".join([text[code:end] for _, _, _, code, end in fenced_blocks(text)])


def _fenced(text: str) -> TextAction | None:
    blocks = fenced_blocks(text)
    if not blocks:
        return None
    start, end, language, code, code_end = blocks[-1]
    language = language.lower()
    name = "bash" if language in _SHELLS or _SHELL_WORD.search(language) else language
    key = "command" if name == "bash" else "code"
    thought = (text[:start] + text[end:]).strip()
    return TextAction(name, json.dumps({key: text[code:code_end]}, ensure_ascii=False),
                      thought)


def _markup(text: str) -> TextAction | None:
    if "</" not in text:
        return None
    # Markup inside fenced code is code the agent shows, not its action; a fence inside
    # an action (a file it writes) is part of the action.
    fences = [(a, b) for a, b, _, _, _ in fenced_blocks(text)] if "```" in text else []
    found: Element | None = None
    for element in elements(text, line_start=True):
        tag, start, inside, close, _ = element
        if not any(a <= start < b for a, b in fences) and \
                elements(text[inside:close], first=True):
            found = element  # the last: what the agent ends its turn with is its action
    if found is None:
        return None
    tag, start, inside, close, end = found
    content = text[inside:close]
    arguments = {child: content[a:b].strip("\n") for child, _, a, b, _ in elements(content)}
    thought = _BRACKETED.sub("", text[:start] + text[end:]).strip()
    return TextAction(tag, json.dumps(arguments, ensure_ascii=False), thought, markup=True)


def _action_line(text: str) -> TextAction | None:
    found = _ACTION_LINE.search(text)
    if found is None:
        return None
    action = found.group(1).strip()
    verb = _VERB.search(action)
    name = verb.group(0).lower() if verb else "act"
    return TextAction(name, json.dumps({"action": action}, ensure_ascii=False),
                      text[: found.start()].strip())


# Tried in order; the first that reads the text wins.
# Markup before fences: a file an agent writes in a markup action may hold fenced code.
READERS: tuple[Callable[[str], TextAction | None], ...] = (_json_step, _markup, _fenced,
                                                           _action_line)


def asks_name(name: str) -> bool:
    """Whether an action of this name asks the user something (``ask_followup_question``,
    ``ask_user``): what comes back is the user's answer."""
    return _ASKS.search(name) is not None


def asks_user(message: Message) -> bool:
    """Whether an assistant's message ends with a markup action that asks the user
    something (see ``asks_name``): the user message after it is the user's words, in
    whatever shape the harness wraps them."""
    text = message.text
    return message.role == "assistant" and not message.tool_calls and "</" in text \
        and asks_name(read_action(text).name)


def read_action(text: str) -> TextAction:
    """The action in an assistant's text that an observation answered."""
    for reader in READERS:
        found = reader(text)
        if found is not None:
            return found
    return TextAction("act", json.dumps({"text": text.strip()}, ensure_ascii=False), "")


# An edit block: the file's path on the line before (a fence may sit between), the text
# to find, the text to put in its place. Aider's SEARCH/REPLACE and its older
# ORIGINAL/UPDATED; Cline and others write the same shape.
_EDIT_BLOCK = re.compile(
    r"^[ \t]*([^\n`<>=]*?\S)[ \t]*\n(?:[ \t]*```[\w+-]*[ \t]*\n)?"
    r"<<<<<<< ?(?:SEARCH|ORIGINAL)[ \t]*\n(.*?)^=======[ \t]*\n(.*?)"
    r"^>>>>>>> ?(?:REPLACE|UPDATED)[ \t]*$(?:\n[ \t]*```[ \t]*$)?",
    re.MULTILINE | re.DOTALL)
EDIT_MARK = "<<<<<<<"


def edit_blocks(text: str) -> tuple[list[TextAction], str]:
    """The edits an assistant wrote as blocks in its text, each an ``edit`` of its file
    (the path, the text it replaced, the new text), and the text around them."""
    if EDIT_MARK not in text:
        return [], text
    found: list[TextAction] = []
    # The text around the blocks, from the same matches: a second scan (``sub``) read a
    # long reply's every line again.
    around: list[str] = []
    at = 0
    for m in _EDIT_BLOCK.finditer(text):
        found.append(TextAction("edit", json.dumps(
            {"path": m.group(1).strip().strip("*`'\""), "old_str": m.group(2).rstrip("\n"),
             "new_str": m.group(3).rstrip("\n")}, ensure_ascii=False), ""))
        around.append(text[at:m.start()])
        at = m.end()
    if not found:
        return found, text
    around.append(text[at:])
    return found, "".join(around).strip()


def _edit_blocks(text: str) -> tuple[tuple[TextAction, ...], str]:
    edits, rest = edit_blocks(text)
    return tuple(edits), rest


class TextActions:
    """The readings above, memoized by text: an agent resends every action and every
    observation on every step, and a warm call should read only its new ones."""

    def __init__(self, *, cache_bytes: int = 16 << 20) -> None:
        # Split by what each holds live at 1,000 agents in progress (bench --load --agents
        # 1000 --from-step 30): the actions most (14,500 readings of about 2.4 KB, each
        # missed for 23 us), the edits their 5 MB, the observations' answers 2 MB, the
        # shapes 4 MB and the blocks more than fit (8.5 KB a text, read again for 20 us);
        # a console command is one line.
        self._observations: Memo[str, bool] = Memo(cache_bytes * 8 // 64, fingerprinted=True)
        self._actions: Memo[str, TextAction] = Memo(cache_bytes * 27 // 64, fingerprinted=True)
        self._edits: Memo[str, tuple[tuple[TextAction, ...], str]] = Memo(
            cache_bytes * 18 // 64, fingerprinted=True)
        self._commands: Memo[str, TextAction | None] = Memo(cache_bytes // 64, fingerprinted=True)
        self._shapes: Memo[str, tuple[str, ...]] = Memo(cache_bytes * 4 // 64, fingerprinted=True)
        self._blocks: Memo[str, Blocks] = Memo(cache_bytes * 2 // 64, fingerprinted=True)
        # A warm call asks every text's block tags and whether each block repeats the
        # one before it, which a few bytes answer: the blocks' lines (environment
        # details listing a project's files: 60 KB a text as lines, 20 KB as their
        # fingerprints) were read again on every call of a Roo Code run, where the run's
        # blocks outgrew their memo, and are now read only for a pair not seen before.
        self._tags: Memo[str, tuple[str, ...]] = Memo(cache_bytes // 64, fingerprinted=True)
        self._repeats: Memo[BlockPair, bool] = Memo(cache_bytes // 64, fingerprinted=True)
        # A text without its stale blocks: the same string on every call, so that what
        # reads it next (counts, outcomes, facts, all memoized by text) finds it without
        # hashing a new copy, and the blocks are not looked for again.
        self._stripped: Memo[tuple[str, frozenset[str]], str] = Memo(
            cache_bytes * 2 // 64, fingerprinted=True)

    @property
    def usage(self) -> CacheUsage:
        return combined(self._observations.usage, self._actions.usage, self._edits.usage,
                        self._commands.usage, self._shapes.usage, self._blocks.usage,
                        self._tags.usage, self._repeats.usage, self._stripped.usage)

    def command(self, text: str) -> TextAction | None:
        """The console command a user message is, if it is one (see ``console_command``)."""
        if not text.lstrip().startswith("/"):
            return None
        return self._commands.get(text, console_command)

    def is_observation(self, text: str) -> bool:
        return self._observations.get(text, is_observation)

    def action(self, text: str) -> TextAction:
        return self._actions.get(text, read_action)

    def edits(self, text: str) -> tuple[tuple[TextAction, ...], str]:
        if EDIT_MARK not in text:
            return (), text
        return self._edits.get(text, _edit_blocks)

    @staticmethod
    def _all(message: Message, shaped: Callable[[str], bool]) -> bool:
        """Whether every text of a user message has an output's shape: a wire format that
        joins neighbouring user messages (Anthropic's, Gemini's) puts the user's next
        words in the same message as the report before them, and those stay the user's."""
        texts = _texts(message)
        return bool(texts) and all(shaped(t) for t in texts)

    def _asks(self, message: Message) -> bool:
        """Whether an assistant's action asks the user (its answer is theirs)."""
        text = message.text
        return "</" in text and asks_name(self.action(text).name)

    def blocks(self, text: str) -> Blocks:
        if "</" not in text:  # no block: nothing to remember (or to weigh) for it
            return ()
        return self._blocks.get(text, tagged_blocks)

    def block_tags(self, text: str) -> tuple[str, ...]:
        """The tags of a text's blocks (see ``tagged_blocks``), in order."""
        if "</" not in text:
            return ()
        return self._tags.get(text, self._tags_of)

    def _tags_of(self, text: str) -> tuple[str, ...]:
        # From the blocks' memo: a cold call reads each text's blocks once, for its tags
        # and for the pairs it compares.
        return tuple([tag for tag, _ in self.blocks(text)])

    def repeats(self, pair: BlockPair) -> bool:
        """Whether the later of two blocks of one tag repeats the earlier (``repeats``);
        each block is its text and its place among that text's blocks of the tag."""
        return self._repeats.get(pair, self._repeated)

    def without(self, text: str, tags: frozenset[str]) -> str:
        """``text`` without its blocks of these tags (see ``without_blocks``)."""
        return self._stripped.get((text, tags), _without_blocks)

    def _repeated(self, pair: BlockPair) -> bool:
        tag, (text, k), (later_text, j) = pair
        earlier = [lines for t, lines in self.blocks(text) if t == tag][k]
        later = [lines for t, lines in self.blocks(later_text) if t == tag][j]
        return repeats(earlier, later)

    def _learned(self, messages: Sequence[Message]) -> frozenset[str]:
        """The shapes that open enough of the user messages right after an assistant
        message without tool calls (the task aside) to be this run's result shape."""
        counts: dict[str, int] = {}
        candidates = 0
        task_seen = False
        previous: Message | None = None
        for m in messages:
            if m.role == "user":
                if task_seen and previous is not None and previous.role == "assistant" \
                        and not previous.tool_calls:
                    candidates += 1
                    for shape in {k for t in _texts(m) for k in self._shapes.get(t, shapes)}:
                        counts[shape] = counts.get(shape, 0) + 1
                task_seen = True
            previous = m
        least = max(_LEARNED_AT_LEAST, _LEARNED_SHARE * candidates)
        return frozenset(shape for shape, n in counts.items() if n >= least)

    def _shaped(self, learned: frozenset[str]) -> Callable[[str], bool]:
        if not learned:
            return self.is_observation
        return lambda text: self.is_observation(text) or \
            not learned.isdisjoint(self._shapes.get(text, shapes))

    def observations(self, messages: Sequence[Message]) -> list[int]:
        """Positions of user messages that answer a text action: each right after an
        assistant message without tool calls and shaped as a harness's output (a shape
        known here, or the one this run's harness gives its results), or right after a
        console command the user typed and shaped as its output. The task (the first
        user message) is never one, nor a command (the head stays as it came)."""
        found: list[int] = []
        task_seen = False
        first_user = -1
        previous: Message | None = None
        shaped = self._shaped(self._learned(messages))
        for i, m in enumerate(messages):
            if m.role == "user":
                if task_seen and previous is not None and (
                        (previous.role == "assistant" and not previous.tool_calls
                         and self._all(m, shaped) and not self._asks(previous))
                        or (previous.role == "user" and found[-1:] != [i - 1]
                            and i - 1 != first_user
                            and self.command(previous.text) is not None
                            and self._all(m, is_console_output))):
                    found.append(i)
                if not task_seen:
                    first_user = i
                task_seen = True
            previous = m
        return found


def _texts(message: Message) -> list[str]:
    return [p.text for p in message.parts if p.kind == "text"]
