"""tf.import_graph_def: adds a GraphDef's nodes to the default graph under a
name prefix ("import" unless name="" ), with input_map rewiring inputs to
existing tensors, and returns the requested elements."""

from runnel.framework import ops
from runnel.proto import graph_pb2


def _split(inp):
    ctrl = inp.startswith("^")
    name = inp[1:] if ctrl else inp
    node, _, idx = name.partition(":")
    return ctrl, node, int(idx) if idx else 0


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None):
    if not isinstance(graph_def, graph_pb2.GraphDef):
        try:
            gd = graph_pb2.GraphDef()
            gd.ParseFromString(graph_def.SerializeToString())
            graph_def = gd
        except AttributeError:
            raise TypeError("graph_def must be a GraphDef proto.") from None
    g = ops.get_default_graph()
    if name is None:
        name = "import"
    input_map = dict(input_map or {})
    mapped = {}
    for k, v in input_map.items():
        if not isinstance(v, ops.Tensor):
            v = ops.convert_to_tensor(v)
        ctrl, node, idx = _split(k)
        mapped[(node, idx)] = v
    with g.name_scope(name) as scope:
        pass
    prefix = scope if name else ""
    gd = graph_pb2.GraphDef()
    gd.CopyFrom(graph_def)
    legacy = gd.versions.producer <= 21
    for nd in gd.node:
        nd.name = prefix + nd.name
        if legacy and nd.op == "Placeholder" and "shape" in nd.attr:
            # TF's legacy rule: graphs before producer 22 could not tell a
            # scalar shape attr from "unknown", and TF reads it as unknown.
            sp = nd.attr["shape"].shape
            if not sp.unknown_rank and len(sp.dim) == 0:
                sp.unknown_rank = True
        new_inputs = []
        for inp in nd.input:
            ctrl, node, idx = _split(inp)
            if not ctrl and (node, idx) in mapped:
                new_inputs.append(mapped[(node, idx)].name)
            elif ctrl:
                new_inputs.append("^" + prefix + node)
            else:
                new_inputs.append(prefix + (inp if ":" not in inp else "%s:%d" % (node, idx)))
        del nd.input[:]
        nd.input.extend(new_inputs)
        if "_class" in nd.attr:
            vals = [(b"loc:@" + prefix.encode() + s[5:]) if s.startswith(b"loc:@") else s
                    for s in nd.attr["_class"].list.s]
            del nd.attr["_class"].list.s[:]
            nd.attr["_class"].list.s.extend(vals)
    try:
        g._import_graph_def_bytes(gd.SerializeToString())
    except Exception as e:  # errors from C++ import: TF raises ValueError
        from runnel.framework import errors
        if isinstance(e, errors.OpError):
            raise ValueError(e.message) from None
        raise
    if return_elements is None:
        return None
    out = []
    for r in return_elements:
        out.append(g.as_graph_element(prefix + r, allow_tensor=True, allow_operation=True))
    return out
