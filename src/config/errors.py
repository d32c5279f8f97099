"""What a bad config value is: ConfigError (`key=value: what is allowed`, one line on stderr and exit 2 from
the command line), and Choice, the closed sets of strings the schema's fields take."""
from __future__ import annotations

from enum import Enum
from typing import Any


class ConfigError(ValueError):
    """A bad config value: `key=value: what is allowed`."""

    def __init__(self, key: str, value: Any, allowed: str):
        super().__init__(f"{key}={value}: {allowed}")
        self.parts = (key, value, allowed)

    def __reduce__(self):  # raised in a datasets.map worker (data.num_proc > 1), it comes back pickled
        return type(self), self.parts


class Choice(str, Enum):
    """A closed set of strings, made as `Choice("Name", "value1 value2 ...")`. A member is a str equal to its
    value and named by it (OmegaConf looks members up by name), and prints as it, so code written for plain
    strings (`== "packed"`, f-strings, json in report.json, W&B's config) sees no difference."""

    @staticmethod
    def _generate_next_value_(name, start, count, last_values):
        return name

    def __str__(self) -> str:  # Enum's own: "PaddingStrategy.packed"
        return self.value

    def __format__(self, spec: str) -> str:  # f-strings: a str-mixed Enum formats like Enum.__str__ otherwise
        return format(self.value, spec)

    def __repr__(self) -> str:  # inside a printed dict or list: 'packed', not <PaddingStrategy.packed: 'packed'>
        return repr(self.value)


def positive(key: str, value: Any) -> None:
    if not isinstance(value, int) or value < 1:
        raise ConfigError(key, value, "must be a positive integer")


def seed_in_range(key: str, value: Any) -> None:
    """A seed numpy takes too (torch takes negatives, numpy's RandomState raised a traceback mid-run)."""
    if not isinstance(value, int) or not 0 <= value < 2**32:
        raise ConfigError(key, value, "must be a whole number from 0 to 2**32 - 1")


