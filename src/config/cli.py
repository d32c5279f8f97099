"""What the command line needs before Hydra parses it: `--help` as a list of options, a value outside a closed
set (a Choice field of the schema) or a renamed option refused in one line, the names users type rewritten to
the keys Hydra knows, and numeric group choices quoted."""
from __future__ import annotations

import dataclasses
import os
import re
import sys
import textwrap
import typing

from . import run_dir
from .errors import Choice, ConfigError
from .paths import CONF_DIR
from .schema import Config
from .training import HF_NAMES  # the TrainingArguments names people already type, for the knobs trainsweep owns

_NUMERIC_CHOICE = re.compile(r"^([+~]{0,2})([\w/-]+)=(\d+(?:,\d+)*)$")
_PLAIN_VALUES = re.compile(r"^\+{0,2}([A-Za-z_][\w.]*)=([\w.-]+(?:,[\w.-]+)*)$")  # key=a or a sweep key=a,b


def quote_numeric_choices(args: list[str]) -> list[str]:
    """`batch=16` -> `batch='16'`. Hydra parses a bare 16 as an int and refuses it as a config group
    choice; quoted, it names conf/batch/16.yaml. Sweeps too: `batch=4,8` -> `batch='4','8'`."""
    out = []
    for arg in args:
        m = _NUMERIC_CHOICE.match(arg)
        if m and os.path.isdir(os.path.join(CONF_DIR, m.group(2))):
            arg = f"{m.group(1)}{m.group(2)}=" + ",".join(f"'{v}'" for v in m.group(3).split(","))
        out.append(arg)
    return out


def choice_type(key: str) -> type[Choice] | None:
    """The Choice a dotted key of the schema takes (`padding.strategy` -> PaddingStrategy), else None."""
    node: typing.Any = Config
    for part in key.split("."):
        if not dataclasses.is_dataclass(node):
            return None
        node = typing.get_type_hints(node).get(part)
        node = next((a for a in typing.get_args(node) if a is not type(None)), node)  # Optional[X] -> X
    return node if isinstance(node, type) and issubclass(node, Choice) else None


NAME_MAX = 255  # bytes in one path component on Linux and macOS file systems


def check_dirs(overrides: list[str]) -> None:
    """A run or sweep directory whose name no file system takes (Hydra's own answer is a traceback), or that
    would write over trainsweep's own files or another run's (src/config/run_dir.py): refused before Hydra
    makes it and writes its .hydra/ there."""
    for arg in overrides:
        key, _, value = arg.lstrip("+").partition("=")
        if key in ("hydra.run.dir", "hydra.sweep.dir"):
            long = max(value.split("/"), key=lambda part: len(part.encode()))
            if len(long.encode()) > NAME_MAX:
                raise ConfigError(key, value[:60] + "...", f"a path component of {len(long.encode())} bytes; file "
                                                          f"systems stop at {NAME_MAX}")
            if "${" not in value:  # an interpolation: the run checks the directory Hydra resolves
                run_dir.check(value, key)


def _leaf_keys(node=Config, prefix: str = "") -> list[str]:
    """Every dotted key the schema has (`trainer.lr`, `model.init.head_init`, ...)."""
    out = []
    for name, hint in typing.get_type_hints(node).items():
        hint = _unoptional(hint)
        out += _leaf_keys(hint, f"{prefix}{name}.") if dataclasses.is_dataclass(hint) else [prefix + name]
    return out


def _is_key(key: str) -> bool:
    """Whether the schema has this dotted key: a field, or any key under a free-form mapping (model.arch.X,
    trainer.args.X)."""
    node: typing.Any = Config
    for i, part in enumerate(key.split(".")):
        if not dataclasses.is_dataclass(node):
            return False  # a key under a leaf value
        hints = typing.get_type_hints(node)
        if part not in hints:
            return False
        node = _unoptional(hints[part])
        if typing.get_origin(node) is dict:
            return True
    return True


def _unoptional(hint):
    """Optional[X] -> X; anything else as it is."""
    if typing.get_origin(hint) is typing.Union:
        return next((a for a in typing.get_args(hint) if a is not type(None)), hint)
    return hint


def check_keys(overrides: list[str]) -> None:
    """An override of a key the schema doesn't have, with or without Hydra's `+` (which would add it, unused,
    beside the real one: `+lr=1e-4` ran with trainer.lr unchanged) is one line naming the closest real key."""
    import difflib

    groups = sorted(d for d in os.listdir(CONF_DIR) if os.path.isdir(os.path.join(CONF_DIR, d)))
    for arg in overrides:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, _, value = arg.lstrip("+~").partition("=")
        if key in groups:
            check_group_choice(key, value)
            continue
        if key.startswith("hydra.") or key == "hydra" or "/" in key or _is_key(key):
            continue
        known = _leaf_keys()
        last = key.rsplit(".", 1)[-1]
        near = [k for k in known if k.rsplit(".", 1)[-1] == last] or \
            difflib.get_close_matches(key, known + groups, n=2, cutoff=0.6) or \
            difflib.get_close_matches(last, groups + [k.rsplit(".", 1)[-1] for k in known], n=1)
        near = [next((k for k in known if k.endswith("." + n)), n) if n not in known and n not in groups else n
                for n in near]
        raise ConfigError(key, value, "no such key" + (f"; did you mean {' or '.join(near)}?" if near else "")
                          + " (--help lists the groups; --cfg job every key)")


BOOLS = ("true", "false", "yes", "no", "on", "off", "y", "n", "1", "0")  # what OmegaConf takes for a bool, any case
_READS = {int: ("a whole number", lambda v: re.fullmatch(r"[+-]?\d+(?:_\d+)*", v)),  # int() takes 1_000 too
          float: ("a number", lambda v: re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?inf|nan", v.lower())),
          bool: ("true or false", lambda v: v.lower() in BOOLS or v.isdigit())}


def check_values(overrides: list[str], multirun: bool) -> None:
    """What Hydra answers in five lines or more, in one: a value its key's type can't take (trainer.max_steps=abc),
    a comma list without -m, a group or key given no value at all. Values in Hydra's grammar (quoted, lists,
    interpolations, choice() and range()) stay Hydra's to check."""
    groups = {d for d in os.listdir(CONF_DIR) if os.path.isdir(os.path.join(CONF_DIR, d))}
    for arg in overrides:
        key, eq, value = arg.lstrip("+~").partition("=")
        if arg.startswith("-") or key.startswith("hydra") or not (key in groups or _is_key(key)):
            continue
        if not eq:
            raise ConfigError(key, "", f"no value: write {key}=VALUE")
        if re.search(r"[\[\]{}()'\"$]", value):
            continue
        if "," in value and not multirun:
            raise ConfigError(key, value, "a comma list is a sweep: add -m to run each value, or quote it "
                                          f"({key}='{value}') for one string")
        node = Config
        for part in key.split("."):
            hints = typing.get_type_hints(node) if dataclasses.is_dataclass(node) else {}
            node = _unoptional(hints.get(part))
        what, reads = _READS.get(node, (None, None))
        for one in value.split(",") if reads else ():
            if one != "null" and not reads(one):
                raise ConfigError(key, one, f"must be {what}")


def check_group_choice(group: str, value: str) -> None:
    """`padding=dynamc`: a choice (or a sweep's choices) with no YAML of that name in conf/<group>/ is one line
    with the nearest, where Hydra's answer is fifteen. Values Hydra's grammar spells otherwise (quoted,
    choice(), interpolations) stay Hydra's to refuse."""
    import difflib

    names = sorted(f.removesuffix(".yaml") for f in os.listdir(os.path.join(CONF_DIR, group)) if f.endswith(".yaml"))
    if not value:
        raise ConfigError(group, "", f"give one {group} (allowed: {', '.join(names)})")
    if not re.fullmatch(r"[\w.-]+(?:,[\w.-]+)*", value):
        return
    for choice in value.split(","):
        if choice != "null" and choice not in names:
            near = difflib.get_close_matches(choice, names, n=1)
            raise ConfigError(group, choice, f"no such {group}" + (f"; did you mean {near[0]}?" if near else "")
                              + f" (allowed: {', '.join(names)})")
        if choice != "null" and (tag := python_tag(os.path.join(CONF_DIR, group, f"{choice}.yaml"))):
            raise ConfigError(group, choice, tag)


def python_tag(path: str) -> str | None:
    """A `!!python/...` tag in a YAML file: loading constructs Python objects (or runs code) from it. Hydra's loader
    refuses it too, in a traceback; trainsweep reads plain YAML only."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if m := re.search(r"!!?python/[\w/.:-]*", line.split("#", 1)[0]):
                return f"{path} line {number} holds the tag {m.group(0)}, which builds Python objects: trainsweep reads " \
                       "plain YAML values only; remove the tag"
    return None


def check_choices(overrides: list[str]) -> None:
    """ConfigError for `key=value` where key takes a Choice and value is none of it. Hydra refuses such a value
    too while composing, but in several lines; the overrides it can't read as plain values (quoted, choice(),
    interpolations) stay Hydra's to refuse."""
    for arg in overrides:
        m = _PLAIN_VALUES.match(arg)
        choices = choice_type(m.group(1)) if m else None
        for value in m.group(2).split(",") if choices else ():
            # OmegaConf also takes `PaddingStrategy.packed`, and null where the field is Optional (else refuses it)
            if value != "null" and value.removeprefix(choices.__name__ + ".") not in choices.__members__:
                raise ConfigError(m.group(1), value, "allowed: " + ", ".join(choices.__members__))


RENAMED = {("padding", "bucketed"): "padding=grouped (length-grouped sampling; padding=buckets also pads to "
                                   "multiples of 64 for a few fixed shapes)",
           ("dataloader", "tuned"): "dataloader=workers (2 workers, pinned memory, prefetch, persistent: what it is, "
                                    "and no faster than basic on pre-tokenised rows)"}


QUESTIONS = {"both": "the largest micro-batch that fits and the fastest split, the default",
             "largest": "only the largest that fits: one run a family, no speed timed",
             "fastest": "only the fastest split"}


def rewrite(args: list[str]) -> list[str]:
    """Keys as a user types them, as Hydra needs them:
    - `sweep.repeats=3` -> `hydra.launcher.repeats=3` (`sweep` is the group of saved sweeps; the launcher
      runs the repeats, under any sweeper a preset picks); `sweep.plan=predict|all` and
      `sweep.question=both|largest|fastest` likewise;
    - `batch.effective=64` -> `batch.grad_accum=${grad_accum_for:64,${batch.size}}` (each job's grad_accum from its
      own micro-batch: `-m batch=4,8,16 batch.effective=64` compares splits of one effective batch);
    - `learning_rate=3e-4` -> `trainer.lr=3e-4`, and the other HF_NAMES;
    - `trainer.args.lr_scheduler_type=cosine` -> `++trainer.args.lr_scheduler_type=cosine` (a new key in a
      dict of pass-through TrainingArguments fields; src/train/trainer.py checks the names), and
      `trainer.inductor.X=...` likewise (torch._inductor.config options, checked by src/config/compiling.py);
    - `batch=12` -> `batch.size=12` where conf/batch has no 12.yaml;
    - `baseline=debug=none` -> `baseline='debug=none'` (an override as the value: Hydra's grammar needs quotes)."""
    out = []
    for arg in args:
        key, eq, value = arg.partition("=")
        old = (key.removesuffix(".strategy") if key == "padding.strategy" else key, value)
        if old in RENAMED:
            raise ConfigError(key, value, "renamed: " + RENAMED[old])
        if key == "sweep.repeats":
            if not value.isdigit() or int(value) < 1:
                raise ConfigError("sweep.repeats", value, "must be a positive integer")
            arg = f"hydra.launcher.repeats={value}"
        elif key == "batch.effective":
            if not value.isdigit() or int(value) < 1:
                raise ConfigError("batch.effective", value, "must be one positive integer (the micro-batch x grad_accum every job keeps)")
            arg = f"batch.grad_accum='${{grad_accum_for:{value},${{batch.size}}}}'"
        elif key == "sweep.plan":
            if value not in ("all", "predict"):
                raise ConfigError("sweep.plan", value, "must be all (run every cell) or predict (predict every cell, run those that could win)")
            arg = f"hydra.launcher.plan={value}"
        elif key == "sweep.question":
            if value not in QUESTIONS:
                raise ConfigError("sweep.question", value,
                                  "must be " + ", ".join(f"{k} ({v})" for k, v in QUESTIONS.items()))
            arg = f"hydra.launcher.question={value}"
        elif eq and key in HF_NAMES:
            arg = f"{HF_NAMES[key]}={value}"
        elif eq and key.startswith(("trainer.args.", "trainer.inductor.")):
            arg = "++" + arg
        elif key == "batch" and all(v.isdigit() for v in value.split(",")) and \
                not all(os.path.isfile(os.path.join(CONF_DIR, "batch", f"{v}.yaml")) for v in value.split(",")):
            arg = f"batch.size={value}"  # any micro-batch, not only the sizes with a YAML (each is size N, grad_accum 1)
        elif key == "baseline" and "=" in value and value[:1] not in "'\"":
            arg = f"baseline='{value}'"
        out.append(arg)
    _check_effective(out)
    return out


def _check_effective(args: list[str]) -> None:
    """batch.effective against the micro-batches the same command line names: refused before any job starts."""
    effective = next((int(a.split("{grad_accum_for:")[1].split(",")[0]) for a in args if "{grad_accum_for:" in a), None)
    sizes = [v for a in args if a.startswith("batch.size=") for v in a.partition("=")[2].split(",")]
    for size in sizes:
        if effective and size.isdigit() and (int(size) > effective or effective % int(size)):
            raise ConfigError("batch.effective", effective, f"must be a multiple of every batch.size (not of {size})")


def _first_comment(path: str) -> str:
    """The first sentence of a YAML's opening comment, whole (it may run over several comment lines)."""
    words = []
    with open(path) as f:
        for line in f:
            if not line.startswith("#") or line.startswith(("#   ", "# python ")):  # the end, or an example command
                break
            if not line.startswith("# @package"):
                words.append(line.lstrip("# ").rstrip())
    text = " ".join(w for w in words if w)
    end = re.search(r"\.(\s|$)", text)
    return text[:end.start() + 1] if end else text


def command(argv0: str) -> str:
    """How the user started us, for messages: the installed `trainsweep` command or `python -m src.run`."""
    return "trainsweep" if os.path.basename(argv0) == "trainsweep" else "python -m src.run"


def help_text(cmd: str = "python -m src.run") -> str:
    """`--help`: every group with its options, each with the first sentence of its YAML's comment (what it does
    to speed or memory), numeric options in numeric order. The full composed config is `--cfg job`."""
    lines = [f"{cmd} [GROUP=OPTION ...] [key=value ...]".ljust(57) + "one run",
             f"{cmd} -m GROUP=A,B key=x,y ...".ljust(57) + "a sweep: every combination, one process each",
             f"{cmd} --cfg job [overrides]".ljust(57) + "the composed config, key by key", ""]
    for group in sorted(g for g in os.listdir(CONF_DIR) if os.path.isdir(os.path.join(CONF_DIR, g)) and g != "hydra"):
        names = [f[:-5] for f in os.listdir(os.path.join(CONF_DIR, group)) if f.endswith(".yaml")]
        names.sort(key=lambda n: (0, int(n), "") if n.isdigit() else (1, 0, n))
        lines.append(f"{group}:")
        width = max(map(len, names))
        for name in names:
            about = _first_comment(os.path.join(CONF_DIR, group, f"{name}.yaml"))
            wrapped = textwrap.wrap(about, width=max(40, 112 - width)) or [""]  # whole sentences, never cut
            lines.append(f"  {name:<{width}}  {wrapped[0]}")
            lines += [" " * (width + 4) + more for more in wrapped[1:]]
        lines.append("")
    lines.append("Any key: trainer.max_steps=200, data.max_length=256, trainer.args.<TrainingArguments field>=...")
    return "\n".join(lines)


def hydra_argv(argv: list[str]) -> list[str]:
    """sys.argv as Hydra should see it; a bad Choice value ends here, as a config error: one line, exit 2."""
    cmd = command(argv[0])
    if any(a in ("--help", "-h") for a in argv[1:]):  # Hydra's own would print the whole composed config
        print(help_text(cmd))
        sys.exit(0)
    try:
        check_choices(argv[1:])
        check_dirs(argv[1:])
        multirun = any(a in ("-m", "--multirun") for a in argv[1:])
        preset = next((a for a in argv[1:] if a.startswith("sweep=")), None)
        if preset and not multirun:  # without -m Hydra would quietly run one job of it
            raise ConfigError("sweep", preset.partition("=")[2], f"a saved sweep runs with -m: {cmd} -m {preset}")
        argv = argv[:1] + rewrite(argv[1:])
        check_keys(argv[1:])
        check_values(argv[1:], multirun)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        sys.exit(2)
    return quote_numeric_choices(argv)
