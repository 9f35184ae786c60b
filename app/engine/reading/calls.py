"""One summary per tool call: its compact head for notes and what it touched for the ledger.

Arguments are parsed once per distinct call and the summary memoized, since
an agent resends the same calls on every step.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.engine import jsontext
from app.engine.errors import InvalidTranscript
from app.engine.jsontext import dumps
from app.engine.memo import CacheUsage, Memo, combined
from app.engine.reading.outcomes import ELLIPSIS, short_path, shorten
from app.engine.transcript.model import Message, ToolCall, validate_pairs

# Argument names, as ``_named`` spells them: lower case, without ``_`` or ``-``, so that
# ``file_path``, ``filePath`` and ``FilePath`` are one name.
_PATH_KEYS = frozenset({"path", "file", "filepath", "filename", "targetfile", "directory"})
_COMMAND_KEYS = frozenset({"command", "cmd", "script"})
_WRITE_TOOL = re.compile(r"write|create|edit|save|insert|replace|patch|append|delete|remove"
                         r"|move|rename|update", re.IGNORECASE)
_URL = re.compile(r"https?://[^\s\"'<>)]+")
# A file name ends where the word does: "config.py.backup" is not "config.py.backu".
_FILE = r"((?:\.{0,2}/)?[\w.@/-]*\w\.\w{1,8})(?![\w.@/-])"
_OPTIONS = r"(?:-\S+(?:\s+\d+)?\s+)*"  # with numeric values, as in "tail -n 5"
_WORD = r"(?:'[^']*'|\"[^\"]*\"|[^\s'\"]\S*)"
_SHELL_WRITE = re.compile(r"(?:>>?|\btee(?:\s+-a)?|sed\s+-i\S*\s+" + _WORD + r")\s*" + _FILE)
# grep and sed take a pattern before the files; it is skipped, not read as one.
_SHELL_READ = re.compile(r"\b(?:cat|head|tail|nl|less|sed\s+-n\s+" + _WORD + r"|grep\s+"
                         + _OPTIONS + _WORD + r")\s+" + _OPTIONS + _FILE)
_OPERAND = r"(?:'[^']*'|\"[^\"]*\"|[^\s'\";&|<>()]+)"  # a word, never a shell operator
# cp, mv and install write their last operand: an agent puts its fixed copy in place.
_SHELL_COPY = re.compile(r"\b(?:cp|mv|install)\s+" + _OPTIONS + r"(?:" + _OPERAND + r"\s+)+"
                         + _FILE + r"(?=\s*(?:$|[;&|)]))")
# Writes that change a file that is there: sed -i, and git checkout/restore of a file.
_SHELL_EDIT = re.compile(r"(?:\bsed\s+-i\S*\s+" + _WORD + r"\s*"
                         r"|\bgit\s+(?:checkout|restore)\s+" + _OPTIONS + r"(?:--\s+)?)" + _FILE)
# A patch in the apply_patch format (Codex's free-form tool, or the command of that name
# in a shell): each file it touches has a header line; one it adds is created.
# A search-and-replace block in an argument (a diff an XML-tool agent sends to edit a
# file: the text to find, a ``=======`` line, the text to put in its place). A call
# carrying one edits the file its arguments name, whatever the tool is called.
_REPLACE_BLOCK = re.compile(r"^<<<<<<< ?SEARCH[^\n]*\n(.*?)^=======[ \t]*\n(.*?)^>>>>>>> ?REPLACE",
                            re.MULTILINE | re.DOTALL)
_REPLACE_MARK = "<<<<<<<"
_PATCH_MARK = "*** Begin Patch"
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (\S[^\n]*?)\s*$", re.MULTILINE)
# Tools that change a file in place (their paths are written, but not created).
_EDIT_TOOL = re.compile(r"edit|replace|insert|patch|append|update", re.IGNORECASE)
# SWE-agent's own shell commands, each a whole command: "create FILE", "open FILE [LINE]".
_AGENT_CREATE = re.compile(r"\s*create\s+" + _FILE + r"\s*$")
_AGENT_OPEN = re.compile(r"\s*open\s+\"?" + _FILE + r"\"?(?:\s+\d+)?\s*$")
# "cd DIR && ...": paths under DIR are spelled relative to it, as the agent mostly does.
_CD = re.compile(r"\s*cd\s+(" + _OPERAND + r")\s*(?:&&|;)")
# Every match of each pattern starts with one of these: matching is tried only where
# one occurs, found with str.find, instead of at every position of the line.
_WRITE_STARTS = (">", "tee", "sed")
_COPY_STARTS = ("cp", "mv", "install")
_EDIT_STARTS = ("sed", "git")
_READ_STARTS = ("cat", "head", "tail", "nl", "less", "sed", "grep")
_SHELL_SCAN_CHARS = 400
# A path of four or more parts, to shorten in the middle in a call's head.
_LONG_PATH = re.compile(r"(?:\.{0,2}[/\\])?(?:[\w.@:-]+[/\\]){3,}[\w.@-]+")
# What a written file defines: functions and classes (Python, JS, Go, Rust), at the start
# of a line of the file's text. Only lines holding one of the words are tried (every
# keyword contains one), found with str.find: a multi-line search tries every position.
_DEFINED = re.compile(r"[ \t]*(?:async[ \t]+)?(?:def|class|function|func|fn)[ \t]+(\w+)")
_DEFINING_WORDS = ("def", "class", "func", "fn")
# A Python script that writes a file (python - <<EOF ... open("x.py", "w")).
_OPEN_WRITE = re.compile(r"open\(\s*[rbf]?['\"]([^'\"\n]+)['\"]\s*,\s*['\"][wax]")
_CONTENT_KEYS = frozenset({"content", "filetext", "newstr", "newstring", "text", "code",
                           "patch", "diff"})
# Keys whose value is code the call runs (a notebook cell, a JSON step's snippet): like
# a script in a command, it is the agent's own code, which its note shows.
_SCRIPT_KEYS = frozenset({"code", "script"})
_MAX_DEFINED = 6
# A command that runs tests (or a test script): after an edit, it is the agent verifying.
_RUNS_TESTS = re.compile(
    r"\b(?:pytest|unittest|tox|nosetests|go test|cargo test|npm (?:run )?test|yarn test"
    r"|make test|rspec|phpunit|mvn test|gradle test|runtests)\b"
    r"|\bpython3? [^|;&\n]*test\w*\.py")
_ARG_CHARS = 60
# Arguments longer than this carry code worth lines of a note (see CallSummary.code).
_CODE_MIN = 120
_HEREDOC = re.compile(r"<<-?[ \t]*['\"]?(\w+)")
_MAX_ARGS = 3
_COMMAND_CHARS = 100
_MIN_STRING = 24  # a cut string keeps at least this much, budget or not
_CUT_ROUNDS = 8  # rounds to fit the budget; the marker's length can need a second one


# Made per call, result or span: __init__ is written out so that mypyc compiles it (see
# transcript.Message). Treated as a value.
@dataclass(init=False)
class CallSummary:
    """What a call did, in the order its arguments name things."""

    head: str  # "name(key=value, ...)" for prior-work notes
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    commands: tuple[str, ...]
    urls: tuple[str, ...]
    json: bool  # the arguments are JSON text
    defines: tuple[str, ...]  # functions and classes in what the call wrote
    wrote: str  # for notes: the files written that the head does not show as written,
    # and what they define ("[wrote a.py; defines parse]"), or ""
    runs_tests: bool  # a command of the call runs tests or a test script
    edits: tuple[str, ...]  # the writes that change a file in place (so it was there)
    # The code the call carries, for its note: a script's or heredoc's body (up to the
    # heredoc's end), a long one-line command, or the text it writes to a file; or "".
    code: str

    def __init__(self, head: str, reads: tuple[str, ...] = (), writes: tuple[str, ...] = (),
                 commands: tuple[str, ...] = (), urls: tuple[str, ...] = (),
                 json: bool = True, defines: tuple[str, ...] = (), wrote: str = "",
                 runs_tests: bool = False, edits: tuple[str, ...] = (),
                 code: str = "") -> None:
        self.head = head
        self.reads = reads
        self.writes = writes
        self.commands = commands
        self.urls = urls
        self.json = json
        self.defines = defines
        self.wrote = wrote
        self.runs_tests = runs_tests
        self.edits = edits
        self.code = code


class _NotJSON:
    """What arguments that are not JSON parse to (JSON's own null is a value)."""


_NOT_JSON = _NotJSON()


def _parse(arguments: str) -> Any:
    try:
        return jsontext.loads(arguments) if arguments else {}
    except ValueError:
        return _NOT_JSON


def _flat(text: str) -> str:
    """An argument on one line, within ``_ARG_CHARS``. A command's leading ``cd DIR &&``
    stays, its DIR shortened in the middle, outside the budget: the paths after it are
    spelled relative to DIR, so without it "ls src" would not say which src."""
    cd = _CD.match(text) if text.startswith("cd") else None
    if cd is not None:
        where = short_path(cd.group(1), 2)
        return f"cd {where} && {_flat(text[cd.end():].lstrip())}"
    flat = " ".join(text[: _ARG_CHARS * 2].split())
    if len(flat) > _ARG_CHARS and ("/" in flat or "\\" in flat):
        # Long paths lose their middle, not their file name: a reader must still tell
        # which file a line is about.
        flat = _LONG_PATH.sub(lambda m: short_path(m.group(0)), flat)
    return shorten(flat, _ARG_CHARS)


def _head(name: str, arguments: str, value: Any) -> str:
    if value is _NOT_JSON:
        return f"{name}({shorten(arguments, _ARG_CHARS)})"
    if not isinstance(value, dict):
        return f"{name}({shorten(dumps(value), _ARG_CHARS)})"
    if len(value) == 1:
        ((key, only),) = value.items()
        if _named(key) in _COMMAND_KEYS and isinstance(only, str):
            # A shell's command alone: "bash: ls src", with no key, quotes or escapes to
            # pay for on every line. Other keys say what their value is (user_id=...).
            return f"{name}: {_flat(only)}"
    shown = []
    # The file a call works on first: its content is cut to its start, and a path after
    # it was cut off (``write(content="# Unit 1.1 ...", filePath="C:\\...")``).
    items = sorted(value.items(), key=lambda item: _named(item[0]) not in _PATH_KEYS)
    for k, v in items[:_MAX_ARGS]:
        # Strings are quoted so their edges show; numbers, lists and objects read as JSON.
        shown.append(f"{k}={dumps(_flat(v))}" if isinstance(v, str) else f"{k}={_flat(dumps(v))}")
    if len(value) > _MAX_ARGS:
        shown.append(ELLIPSIS)
    return f"{name}({', '.join(shown)})"


def _named(key: str) -> str:
    """An argument's name as the key sets above spell it."""
    return key.lower().replace("_", "").replace("-", "")


def markup_head(name: str, arguments: str) -> str:
    """A call the agent wrote as markup, as it wrote it: its element around its first
    arguments, each on one line (``<read_file><path>src/a.ts</path></read_file>``). A
    note in the agent's own notation is one it reads as its own actions, and one whose
    notation it does not drift from when it acts next."""
    value = _parse(arguments)
    if not isinstance(value, dict):
        return f"<{name}>{shorten(arguments, _ARG_CHARS)}</{name}>"
    shown = [f"<{k}>{_flat(v) if isinstance(v, str) else _flat(dumps(v))}</{k}>"
             for k, v in list(value.items())[:_MAX_ARGS]]
    if len(value) > _MAX_ARGS:
        shown.append(ELLIPSIS)
    return f"<{name}>{''.join(shown)}</{name}>"


def summarize(key: tuple[str, str]) -> CallSummary:
    """``key`` is the tool name and the arguments."""
    name, arguments = key
    value = _parse(arguments)
    head = _head(name, arguments, value)
    if not isinstance(value, dict):
        return CallSummary(head, json=value is not _NOT_JSON)
    # One pass over the arguments, in their order: this runs once per distinct call.
    paths: list[str] = []
    writes: list[str] = []
    reads: list[str] = []
    commands: list[str] = []
    urls: list[str] = []
    bodies: list[str] = []  # text the call writes somewhere
    code = ""
    written_text = ""  # the first long value under a content key, code if the call writes
    scripted: list[str] = []  # files a script writes: its head shows no redirection
    edits: list[str] = []
    diffed = False  # a value held search-and-replace blocks: the call edits its path
    for arg, v in value.items():
        if not isinstance(v, str) or not v:
            continue
        k = _named(arg)
        if k in _PATH_KEYS:
            paths.append(v)
        elif k in _COMMAND_KEYS:
            commands.append(shorten(" ".join(v[: _COMMAND_CHARS * 2].split()), _COMMAND_CHARS))
            # The first line names the files; what follows is usually a heredoc body.
            line, _, body = v.partition("\n")
            if not code and len(v) > _CODE_MIN:
                code = _script(line, body) if body else v
            line = line[:_SHELL_SCAN_CHARS]
            cd = _CD.match(line)
            where = cd.group(1).strip("'\"").rstrip("/") if cd else ""
            home = f"{where}/" if where else ""  # "cd /" makes no path relative
            written = _find_all(_SHELL_WRITE, line, _WRITE_STARTS)
            written += _find_all(_SHELL_COPY, line, _COPY_STARTS)
            created = _AGENT_CREATE.match(line)
            if created is not None:
                written.append(created.group(1))
            edited = _find_all(_SHELL_EDIT, line, _EDIT_STARTS)
            written += edited
            if "open(" in v:  # a script, in a heredoc or in ``python -c``
                here = [p for p in _OPEN_WRITE.findall(v) if p not in written]
                written += here
                scripted += _spelled(here, home)
            written = _spelled(written, home)
            writes += written
            edits += _spelled(edited, home)
            opened = _AGENT_OPEN.match(line)
            read = _find_all(_SHELL_READ, line, _READ_STARTS)
            if opened is not None:
                read.append(opened.group(1))
            reads += [p for p in _spelled(read, home) if p not in written]
            if written and body:
                bodies.append(body)
        elif k in _CONTENT_KEYS:
            changed = _replaced(v) if _REPLACE_MARK in v else None
            if changed is not None:  # what it changed is the new text, not what it found
                diffed = True
                v = changed
            bodies.append(v)
            if not written_text and len(v) > _CODE_MIN:
                written_text = v
            if k in _SCRIPT_KEYS and not code and len(v) > _CODE_MIN:
                code = v
        if _PATCH_MARK in v:
            for kind, path in _PATCH_FILE.findall(v):
                if path not in writes:
                    writes.append(path)
                if kind != "Add":
                    edits.append(path)
        if "http" in v:
            urls += _URL.findall(v)
    if paths:
        (writes if diffed or _WRITE_TOOL.search(name) else reads).extend(paths)
        if diffed or (_EDIT_TOOL.search(name) and value.get("command") != "create"):
            edits += paths
    defines: list[str] = []
    if writes:
        for body in bodies:
            defines += _defined(body)
        code = code or written_text
    defines = list(dict.fromkeys(defines))[:_MAX_DEFINED]
    hidden = [p for p in writes if p in scripted or p not in head]
    noted = [f"wrote {', '.join(hidden)}"] if hidden else []
    if defines:
        noted.append(f"defines {', '.join(defines)}")
    tests = any([_RUNS_TESTS.search(c) is not None for c in commands])
    return CallSummary(head, tuple(reads), tuple(writes), tuple(commands), tuple(urls),
                       defines=tuple(defines), wrote=f"[{'; '.join(noted)}]" if noted else "",
                       runs_tests=tests, edits=tuple(dict.fromkeys(edits)), code=code)


def _script(line: str, body: str) -> str:
    """The lines after a command's first one, up to the end of the heredoc the first
    line opens (its delimiter, alone on a line), when it opens one."""
    opened = _HEREDOC.search(line) if "<<" in line else None
    if opened is None:
        return body
    delimiter = opened.group(1)
    # The delimiter alone on a line (a tab or spaces around it for "<<-"), found with
    # str.find: a multi-line pattern would be tried at every position of the body.
    at = body.find(delimiter)
    while at >= 0:
        start = body.rfind("\n", 0, at) + 1
        end = body.find("\n", at)
        if body[start:end if end >= 0 else len(body)].strip(" \t") == delimiter:
            return body[:start]
        at = body.find(delimiter, at + 1)
    return body


def _replaced(value: str) -> str | None:
    """The lines a value's search-and-replace blocks put in that were not there before,
    in order (a block's own markers, such as ``:start_line:``, are not the file's); None
    when it holds no such block."""
    blocks = _REPLACE_BLOCK.findall(value)
    if not blocks:
        return None
    out: list[str] = []
    for found, put in blocks:
        before = set(found.splitlines())
        out += [line for line in put.splitlines() if line.strip() and line not in before]
    return "\n".join(out)


def _defined(body: str) -> list[str]:
    """The names ``body`` defines at the start of its lines, in their order."""
    starts: set[int] = set()
    for word in _DEFINING_WORDS:
        at = body.find(word)
        while at >= 0:
            starts.add(body.rfind("\n", 0, at) + 1)
            at = body.find(word, at + 1)
    names: list[str] = []
    for start in sorted(starts):
        match = _DEFINED.match(body, start)
        if match is not None:
            names.append(match.group(1))
    return names


def _spelled(paths: list[str], home: str) -> list[str]:
    """``paths`` spelled one way each: relative to the directory the command changed to
    (``home``, with its slash), without a leading ``./``, each once."""
    out: list[str] = []
    for p in paths:
        if home and p.startswith(home) and len(p) > len(home):
            p = p[len(home):]
        p = p.removeprefix("./")
        if p not in out:
            out.append(p)
    return out


def _find_all(pattern: re.Pattern[str], line: str, starts: tuple[str, ...]) -> list[str]:
    """What ``pattern.findall(line)`` gives (one group), for a pattern whose matches all
    begin with one of ``starts``."""
    at: list[int] = []
    for start in starts:
        i = line.find(start)
        while i >= 0:
            at.append(i)
            i = line.find(start, i + 1)
    found: list[str] = []
    end = 0
    for i in sorted(at):
        if i < end:
            continue  # inside the last match, as findall never overlaps
        match = pattern.match(line, i)
        if match is not None:
            found.append(match.group(1))
            end = max(match.end(), i + 1)
    return found


def _shorten_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]}{ELLIPSIS}[cut {len(value) - limit} chars]"
    if isinstance(value, dict):
        return {k: _shorten_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_shorten_strings(v, limit) for v in value]
    return value


def cut_arguments(key: str) -> str:
    """Shorten long string values so arguments fit the budget and stay valid JSON.

    ``key`` is the budget, a NUL, then the arguments; the result is the new
    arguments, or the same text when cutting cannot help.
    """
    budget, _, arguments = key.partition("\0")
    limit = int(budget)
    try:
        value = jsontext.loads(arguments)
    except ValueError:
        return arguments
    # Start from the whole budget and take off what is over, shared among the strings
    # being cut: a lone long string keeps all the budget the JSON around it leaves.
    per_string = limit
    for _ in range(_CUT_ROUNDS):
        text = dumps(_shorten_strings(value, per_string))
        excess = len(text) - limit
        if excess <= 0 or per_string <= _MIN_STRING:
            break
        cut = max(_count_longer(value, per_string), 1)
        per_string = max(per_string - -(-excess // cut), _MIN_STRING)
    return text if len(text) < len(arguments) else arguments


def _count_longer(value: Any, limit: int) -> int:
    if isinstance(value, str):
        return 1 if len(value) > limit else 0
    if isinstance(value, dict):
        return sum(_count_longer(v, limit) for v in value.values())
    if isinstance(value, list):
        return sum(_count_longer(v, limit) for v in value)
    return 0


def validate(messages: Sequence[Message], summaries: CallSummaries) -> None:
    """What every job checks before it reads a transcript: each call answered once by a
    result after it, and each call's arguments JSON (tools take JSON; a provider would
    refuse the transcript, and a note could not show them)."""
    validate_pairs(messages)
    for position, m in enumerate(messages):
        for call in m.tool_calls:
            if not summaries.of(call).json:
                where = m.index if m.index >= 0 else position
                raise InvalidTranscript(
                    f"messages[{where}] (role {m.role}) calls tool {call.name!r} with "
                    f"arguments that are not JSON: {shorten(call.arguments, 80)!r}. Send "
                    "the arguments as JSON text, such as '{\"path\": \"a.py\"}', or '{}' "
                    "for none.", pointer=f"/messages/{where}")


class CallSummaries:
    def __init__(self, *, cache_bytes: int = 16 << 20) -> None:
        # A tuple key hashes from its strings' cached hashes: a call met again costs
        # no copy of its arguments.
        self._memo: Memo[tuple[str, str], CallSummary] = Memo(
            cache_bytes * 3 // 4, fingerprinted=True)
        self._cuts: Memo[str, str] = Memo(cache_bytes // 4, fingerprinted=True)

    @property
    def usage(self) -> CacheUsage:
        return combined(self._memo.usage, self._cuts.usage)

    def of(self, call: ToolCall) -> CallSummary:
        return self._memo.get((call.name, call.arguments), summarize)

    def cut(self, call: ToolCall, limit: int) -> ToolCall:
        if len(call.arguments) <= limit:
            return call
        arguments = self._cuts.get(f"{limit}\0{call.arguments}", cut_arguments)
        return call if arguments == call.arguments else replace(call, arguments=arguments)
