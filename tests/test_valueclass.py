"""core/valueclass.py: a value class behaves as the dataclass it replaced (equality, hash, repr, immutability,
``dataclasses.fields``/``replace``/``asdict``, pickling), checked against a real dataclass twin."""
from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from histmig.core.valueclass import FACTORY, value


@dataclass(frozen=True)
class FrozenDC:
    name: str
    size: int | None = None
    extra: dict = field(default_factory=dict)


@value(frozen=True)
class FrozenVC:
    """The same, as a value class."""

    name: str
    size: int | None = None
    extra: dict = field(default_factory=dict)

    def __init__(self, name: str, size: int | None = None, extra: dict = FACTORY) -> None:
        self.__dict__.update(name=name, size=size, extra={} if extra is FACTORY else extra)


@dataclass
class MutableDC:
    name: str
    items: list = field(default_factory=list)
    hidden: int = field(default=0, repr=False, compare=False)


@value
class MutableVC:
    """The same, mutable."""

    name: str
    items: list = field(default_factory=list)
    hidden: int = field(default=0, repr=False, compare=False)

    def __init__(self, name: str, items: list = FACTORY, hidden: int = 0) -> None:
        self.name = name
        self.items = [] if items is FACTORY else items
        self.hidden = hidden


@value(frozen=True)
class Slotted:
    """A frozen class with slots (plan.Fingerprint, plan.Patch)."""

    __slots__ = ("a", "b")
    a: int
    b: bytes

    def __init__(self, a: int, b: bytes = b"") -> None:
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)


def _same_shape(vc, dc) -> str:
    return repr(vc).replace(type(vc).__qualname__, "X") == repr(dc).replace(type(dc).__qualname__, "X")


@pytest.mark.parametrize("args", [("a",), ("a", 3), ("a", None, {"k": [1]})])
def test_frozen_value_class_is_its_dataclass(args):
    vc, dc = FrozenVC(*args), FrozenDC(*args)
    assert _same_shape(vc, dc)
    assert vc == FrozenVC(*args) and not vc != FrozenVC(*args)
    assert vc != FrozenVC("other") and vc != dc and (vc == object()) is False
    assert [f.name for f in dataclasses.fields(vc)] == [f.name for f in dataclasses.fields(dc)]
    assert dataclasses.asdict(vc) == dataclasses.asdict(dc)
    assert dataclasses.replace(vc, size=9) == FrozenVC(args[0], 9, *args[2:])
    assert pickle.loads(pickle.dumps(vc)) == vc and copy.deepcopy(vc) == vc
    with pytest.raises(dataclasses.FrozenInstanceError):
        vc.name = "b"
    with pytest.raises(dataclasses.FrozenInstanceError):
        del vc.size
    with pytest.raises(TypeError):          # a dict field makes either unhashable alike
        hash(vc)


def test_unhashable_alike():
    with pytest.raises(TypeError):
        hash(FrozenVC("a", 1, {}))
    with pytest.raises(TypeError):
        hash(FrozenDC("a", 1, {}))
    with pytest.raises(TypeError):
        hash(MutableVC("a"))


def test_factory_defaults_are_fresh_and_an_explicit_none_is_kept():
    assert MutableVC("a").items is not MutableVC("a").items
    assert FrozenVC("a", extra=None).extra is None and FrozenDC("a", extra=None).extra is None


def test_mutable_value_class_is_its_dataclass():
    vc, dc = MutableVC("a", [1], hidden=5), MutableDC("a", [1], hidden=5)
    assert _same_shape(vc, dc)
    assert vc == MutableVC("a", [1], hidden=6)          # compare=False: not compared, as the dataclass
    vc.name = "b"
    assert vc.name == "b" and dataclasses.replace(vc, items=[]) == MutableVC("b", [])


def test_recursive_repr_does_not_loop():
    vc = MutableVC("a")
    vc.items.append(vc)
    assert repr(vc) == "MutableVC(name='a', items=[...])"


def test_slotted_frozen_pickles_and_refuses_assignment():
    s = Slotted(1, b"x")
    assert not hasattr(s, "__dict__") and repr(s) == "Slotted(a=1, b=b'x')"
    assert pickle.loads(pickle.dumps(s)) == s and hash(s) == hash((1, b"x"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.a = 2


def _value_classes():
    """Every class in histmig decorated with ``@value`` (found by importing each module that uses it)."""
    import importlib
    import pathlib
    root = pathlib.Path(__file__).resolve().parents[1] / "histmig"
    found = []
    for path in sorted(root.rglob("*.py")):
        if "@value" not in path.read_text(encoding="utf-8"):
            continue
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        module = importlib.import_module(name)
        found += [c for c in vars(module).values()
                  if isinstance(c, type) and c.__module__ == name and "_key" in c.__dict__]
    return found


def test_every_value_class_init_matches_its_fields():
    """A value class writes its ``__init__`` by hand: its parameters must be its fields, in field order,
    with the same defaults (FACTORY for a default_factory), so adding a field cannot be half done
    (``init=False`` fields are set by ``__init__`` itself)."""
    import inspect
    classes = _value_classes()
    assert len(classes) >= 30
    for cls in classes:
        fields_ = [f for f in dataclasses.fields(cls) if f.init]
        if not fields_ and "__init__" not in cls.__dict__:
            continue            # a base with no fields (plan.Op): object's __init__
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        assert [p.name for p in params] == [f.name for f in fields_], cls
        for p, f in zip(params, fields_):
            if f.default_factory is not dataclasses.MISSING:
                assert p.default is FACTORY, (cls, f.name)
            elif f.default is not dataclasses.MISSING:
                assert p.default == f.default, (cls, f.name)
            elif "__slots__" not in cls.__dict__:
                assert p.default is inspect.Parameter.empty, (cls, f.name)
