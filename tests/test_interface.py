"""The one facade interface (`needle.facade.interface`): the in-process `Needle` and the remote client both implement it."""

import ast
import inspect
import subprocess
import sys
import textwrap

import pytest

from needle.commands.table import COMMANDS
from needle.facade.api import Needle
from needle.facade.interface import NeedleInterface
from needle.owner.remote import RemoteNeedle

PAIRS = [(NeedleInterface, Needle, RemoteNeedle)]


def _methods(protocol: type) -> list[str]:
    return sorted(
        name for name, value in vars(protocol).items() if inspect.isfunction(value) and not name.startswith("_")
    )


def _parameters(function) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize(("protocol", "local", "remote"), PAIRS, ids=["facade"])
def test_both_implementations_take_the_interfaces_parameters_with_the_same_defaults(protocol, local, remote):
    assert _methods(protocol)
    for name in _methods(protocol):
        declared = _parameters(getattr(protocol, name))
        here, there = _parameters(getattr(local, name)), _parameters(getattr(remote, name))
        assert [(n, k) for n, k, _ in here[: len(declared)]] == [(n, k) for n, k, _ in declared], name
        assert here[: len(declared)] == there[: len(declared)], f"{name}: the facades' defaults differ"
        for (n, _, default), (_, _, wanted) in zip(here, declared):
            assert wanted is Ellipsis or default == wanted, f"{name}({n}=...): {default!r} != {wanted!r}"
        extra = here[len(declared) :] + there[len(declared) :]
        assert all(default is not inspect.Parameter.empty for _, _, default in extra), f"{name}: a required extra"


def _assigned_in_init(cls: type) -> set[str]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__)))
    return {
        target.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
    }


def test_every_command_on_the_facade_is_a_method_of_the_interface():
    methods = {c.method for c in COMMANDS if c.method}
    assert methods and methods <= set(_methods(NeedleInterface))


def test_both_facades_have_every_attribute_of_the_interface():
    attributes = {name for name, value in vars(NeedleInterface).items() if isinstance(value, property)}
    assert attributes == {"settings", "collections", "contexts"}
    for facade in (Needle, RemoteNeedle):
        missing = {a for a in attributes if not isinstance(getattr(facade, a, None), property)} - _assigned_in_init(
            facade
        )
        assert not missing, f"{facade.__name__} lacks {missing}"


def test_a_local_needle_is_a_needle_interface(settings):
    needle = Needle(settings)
    try:
        assert isinstance(needle, NeedleInterface)
    finally:
        needle.close()


def test_the_interface_loads_neither_haystack_nor_pydantic():
    code = "import sys, needle.facade.interface; print(sorted({m.split('.')[0] for m in sys.modules} & {'haystack', 'pydantic'}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
