"""Nested structures as tf.data sees them (TF's data/util/nest): tuples,
namedtuples and dicts (in sorted key order) are structures; everything
else, lists included, is one component (a list becomes a tensor)."""

import collections
import collections.abc


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def is_sequence(x):
    return isinstance(x, (tuple, dict, collections.abc.Mapping))


def _children(x):
    if isinstance(x, collections.abc.Mapping):
        return [x[k] for k in sorted(x)]
    return list(x)


def flatten(structure):
    if not is_sequence(structure):
        return [structure]
    out = []
    for c in _children(structure):
        out.extend(flatten(c))
    return out


def _rebuild(structure, children):
    if isinstance(structure, collections.abc.Mapping):
        keys = sorted(structure)
        items = dict(zip(keys, children))
        if type(structure) is dict:
            return items
        return type(structure)((k, items[k]) for k in structure)
    if _is_namedtuple(structure):
        return type(structure)(*children)
    return tuple(children)


def pack_sequence_as(structure, flat):
    flat = list(flat)
    if len(flat) != len(flatten(structure)):
        raise ValueError(
            "Could not pack sequence. Structure had %d elements, but "
            "flat_sequence had %d elements.  Structure: %s, flat_sequence: %s."
            % (len(flatten(structure)), len(flat), structure, flat))
    pos = [0]

    def build(s):
        if not is_sequence(s):
            v = flat[pos[0]]
            pos[0] += 1
            return v
        return _rebuild(s, [build(c) for c in _children(s)])

    return build(structure)


def assert_same_structure(a, b):
    """ValueError when `a` and `b` do not nest the same way, TypeError
    when they use different sequence types."""
    if is_sequence(a) != is_sequence(b):
        raise ValueError(
            "The two structures don't have the same nested structure.\n\n"
            "First structure: %s\n\nSecond structure: %s" % (a, b))
    if not is_sequence(a):
        return
    if isinstance(a, collections.abc.Mapping) != isinstance(b, collections.abc.Mapping) \
            or (_is_namedtuple(a) or _is_namedtuple(b)) and type(a) is not type(b):
        raise TypeError("The two structures don't have the same sequence type. "
                        "First structure has type %s, while second structure has "
                        "type %s." % (type(a), type(b)))
    if isinstance(a, collections.abc.Mapping) and sorted(a) != sorted(b):
        raise ValueError("The two dictionaries don't have the same set of keys. "
                         "First structure has keys %s, while second structure has "
                         "keys %s." % (sorted(a), sorted(b)))
    ca, cb = _children(a), _children(b)
    if len(ca) != len(cb):
        raise ValueError(
            "The two structures don't have the same number of elements.\n\n"
            "First structure: %s\n\nSecond structure: %s" % (a, b))
    for x, y in zip(ca, cb):
        assert_same_structure(x, y)


def map_structure(fn, *structures):
    for s in structures[1:]:
        assert_same_structure(structures[0], s)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [fn(*xs) for xs in zip(*flats)])


def map_structure_up_to(shallow, fn, *structures):
    """fn over the parts of `structures` at the leaves of `shallow` (which
    may stop above their leaves)."""
    def rec(s, parts):
        if not is_sequence(s):
            return fn(*parts)
        for p in parts:
            if not is_sequence(p):
                raise TypeError("If shallow structure is a sequence, input must "
                                "also be a sequence. Input has type: %s."
                                % type(p).__name__)
            assert_same_structure_shallow(s, p)
        kids = [_children(p) for p in parts]
        return _rebuild(s, [rec(c, [k[i] for k in kids])
                            for i, c in enumerate(_children(s))])
    return rec(shallow, structures)


def assert_same_structure_shallow(a, b):
    if isinstance(a, collections.abc.Mapping):
        if not isinstance(b, collections.abc.Mapping) or sorted(a) != sorted(b):
            raise ValueError("The two structures don't have the same keys: %s and %s"
                             % (a, b))
    elif len(_children(a)) != len(_children(b)):
        raise ValueError("The two structures don't have the same sequence length. "
                         "Input structure has length %d, while shallow structure "
                         "has length %d." % (len(_children(b)), len(_children(a))))
