"""What speedup did to a Trainer: each lever on or off with the line that says what it did or why not, the switch
that turns it back off, and the verification's verdict."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Lever:
    name: str
    on: bool
    detail: str  # what it did, or why it is off
    toggle: object = None  # on(bool): the verification's switch and the way back


@dataclass
class Speedup:
    """What speedup did to a Trainer: each lever on or off with its line, and the verification's verdict."""
    levers: list = field(default_factory=list)
    device: str = "cpu"
    verified: dict | None = None
    packing: dict | None = None  # budget, grad_accum before/after, rows a step before/after
    batches: tuple | None = None  # (PackedDataset, PackCollator): the verification packs with them too

    def add(self, name: str, on: bool, detail: str, toggle=None) -> None:
        self.levers.append(Lever(name, on, detail, toggle))

    def on(self, name: str) -> bool:
        return any(lv.on for lv in self.levers if lv.name == name)

    def applied(self) -> list[Lever]:
        return [lv for lv in self.levers if lv.on]

    def turn_off(self, name: str, why: str) -> None:
        for lv in self.levers:
            if lv.name == name and lv.on:
                lv.toggle(False)
                lv.on, lv.detail = False, why

    def text(self) -> str:
        lines = [f"trainsweep.speedup on {self.device}:"]
        lines += [f"  {'on ' if lv.on else 'off'}  {lv.name}: {lv.detail}" for lv in self.levers]
        if self.verified:
            lines.append(f"  {self.verified['line']}")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {"device": self.device, "levers": {lv.name: {"on": lv.on, "detail": lv.detail} for lv in self.levers},
                "packing": self.packing, "verified": self.verified}
