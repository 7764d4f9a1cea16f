"""tf.train.Saver, checkpoint-state helpers and meta graphs, in TF 1.x's
shape and file formats.

A Saver adds save and restore ops to the graph (TF 1.x's V2 layout, the
names TF gives them, so graphs and files interchange with TensorFlow and
with Runnel's C++ training::Saver):

  save/filename/input, save/filename, save/Const  the checkpoint prefix, a
                      PlaceholderWithDefault fed at save and restore time
                      (SaverDef.filename_tensor_name = "save/Const:0")
  save/SaveV2 (+ /tensor_names, /shape_and_slices)  writes every variable,
                      sorted by name, as a V2 tensor bundle (C++ kernel)

A partitioned variable's parts (Variables with a SaveSliceInfo) are one
entry, the full tensor under the full name. TF writes each part as a slice
of it (shape_and_slices "10 4 0,4:0,4"); Runnel's kernels write whole
tensors only, so the parts are concatenated to save and the restored
tensor is sliced into them (any partitioning, or none, restores it).
  save/control_dependency  the prefix, after SaveV2 (save_tensor_name)
  save/RestoreV2 (+ /tensor_names, /shape_and_slices)  reads them all
  save/Assign, save/Assign_1, ...  one per variable
  save/restore_all    NoOp after every assign (restore_op_name)

With sharded=True the save side is TF's per-device layout (save/StringJoin,
save/num_shards, save/ShardedFilename, save/SaveV2, save/control_dependency,
save/MergeV2Checkpoints, save/Identity) and the restore side one
save/RestoreV2 per device grouped by save/restore_shard.

Saver.save also keeps the text CheckpointState file "checkpoint" in the
prefix's directory (newest last, at most max_to_keep, older checkpoints
deleted unless keep_checkpoint_every_n_hours keeps them) and writes
"<path>.meta", the MetaGraphDef. import_meta_graph puts such a file's
graph (and collections) into the default graph and returns a Saver over
its SaverDef."""

import glob
import os
import time

from google.protobuf import text_format

from runnel.framework import constant_op
from runnel.framework import errors
from runnel.framework import importer
from runnel.framework import ops
from runnel.ops import array_ops
from runnel.ops import control_flow_ops
from runnel.ops import gen_ops
from runnel.ops import state_ops
from runnel.ops import variables
from runnel.proto import checkpoint_state_pb2
from runnel.proto import meta_graph_pb2
from runnel.proto import op_def_pb2
from runnel.proto import saver_pb2
from runnel.training import training_util


def _missing(what):
    from runnel._compat_namespaces import MissingFeatureError
    return MissingFeatureError(what)


# ---------------------------------------------------------------- saveables

class _Saveable:
    """One checkpoint entry: `name` -> the ref tensor of a variable."""

    def __init__(self, name, ref):
        self.name = name
        self.ref = ref
        self.dtype = ref.dtype.base_dtype
        self.device = ref.device

    def tensor_to_save(self):
        return self.ref

    def restore(self, restored):
        return [state_ops.assign(self.ref, restored,
                                 validate_shape=self.ref.shape.is_fully_defined()).op]


class _SlicedSaveable:
    """One checkpoint entry for the parts of a partitioned variable: the
    full tensor under its full name. TF writes each part as a slice of that
    entry (SaveV2 shape_and_slices "10 4 0,4:0,4"); Runnel's SaveV2 and
    RestoreV2 kernels take whole tensors only, so the parts are
    concatenated on save and the full tensor is sliced on restore. The
    entry is a whole tensor of the full shape, which TF's RestoreV2 also
    restores into slices."""

    def __init__(self, name, parts):
        infos = [p._get_save_slice_info() for p in parts]
        full_shape = infos[0].full_shape
        for p, info in zip(parts, infos):
            if info.full_shape != full_shape:
                raise ValueError("Slices of %s have different full shapes: %s and %s"
                                 % (name, full_shape, info.full_shape))
            if p.dtype.base_dtype != parts[0].dtype.base_dtype:
                raise ValueError("Slices of %s have different dtypes" % name)
        order = sorted(range(len(parts)), key=lambda i: infos[i].var_offset)
        self.parts = [parts[i] for i in order]
        self.infos = [infos[i] for i in order]
        self.axis = self._concat_axis(name, full_shape)
        self.name = name
        self.full_shape = list(full_shape)
        self.ref = self.parts[0]._ref()
        self.dtype = self.ref.dtype.base_dtype
        self.device = self.ref.device

    def _concat_axis(self, name, full_shape):
        """The one axis the slices split, checking that they tile the full
        shape along it."""
        axes = set()
        for info in self.infos:
            for d, (o, n, f) in enumerate(zip(info.var_offset, info.var_shape, full_shape)):
                if o != 0 or n != f:
                    axes.add(d)
        if len(axes) > 1:
            raise _missing("Saver: slices of %s split more than one axis" % name)
        axis = axes.pop() if axes else 0
        pos = 0
        for info in self.infos:
            if info.var_offset[axis] != pos:
                break
            pos += info.var_shape[axis]
        else:
            if pos == full_shape[axis]:
                return axis
        raise _missing("Saver: the slices given of %s (offsets %s) do not cover it "
                       "exactly; Runnel's SaveV2 writes whole tensors only, so a "
                       "partitioned variable is saved with all of its parts"
                       % (name, [i.var_offset for i in self.infos]))

    def tensor_to_save(self):
        if len(self.parts) == 1:
            return self.parts[0]._ref()
        with ops.colocate_with(self.ref.op):
            return array_ops.concat([p._ref() for p in self.parts], self.axis)

    def restore(self, restored):
        from runnel.ops import misc_ops
        check = misc_ops.assert_equal(
            array_ops.shape(restored), constant_op.constant(self.full_shape),
            message="checkpoint entry %s has a shape other than the partitioned "
                    "variable's %s" % (self.name, self.full_shape))
        assigns = []
        with ops.control_dependencies([check]):
            for part, info in zip(self.parts, self.infos):
                with ops.colocate_with(part.op):
                    piece = array_ops.slice(restored, info.var_offset, info.var_shape)
                    assigns.append(state_ops.assign(part._ref(), piece).op)
        return assigns


def _as_ref(value, what):
    if isinstance(value, variables.Variable):
        return value._ref()
    if hasattr(value, "_ref"):
        return value._ref()
    if isinstance(value, ops.Tensor) and value.op.type in ("VariableV2", "Variable"):
        return value
    raise TypeError("Saver: %r is not a variable (a tf.Variable or its ref tensor); "
                    "Runnel saves ref variables only" % (value,))


def _slices_of(value, name=None):
    """The parts of a PartitionedVariable or a list of slices (checked as TF
    checks them: Variables with a SaveSliceInfo, of one full variable)."""
    parts = list(value)
    if not parts:
        raise ValueError("Saver: an empty list of slices for %s" % (name,))
    full_name = None
    for p in parts:
        if not isinstance(p, variables.Variable):
            raise ValueError("Slices must all be Variables: %s" % (p,))
        info = p._get_save_slice_info()
        if not info:
            raise ValueError("Slices must all be slices: %s" % (p,))
        if full_name is None:
            full_name = info.full_name
        elif full_name != info.full_name:
            raise ValueError("Slices must all be from the same tensor: %s != %s"
                             % (full_name, info.full_name))
    return parts


def _op_list_to_dict(var_list):
    """{checkpoint key: ref tensor, or the list of a partitioned variable's
    parts} for a list (keys are the variables' op names, a partitioned
    variable's full name) or a dict (keys as given); ValueError for
    duplicates."""
    if isinstance(var_list, dict):
        out = {}
        for name, v in var_list.items():
            if not isinstance(name, str):
                raise TypeError("Saver: checkpoint keys must be strings: %r" % (name,))
            if _is_saveable_object(v):
                out[name] = v
            elif isinstance(v, (list, tuple, variables.PartitionedVariable)):
                out[name] = _slices_of(v, name)
            else:
                out[name] = _as_ref(v, name)
        return out
    if not isinstance(var_list, (list, tuple, set)):
        raise TypeError("Variables to save should be passed in a dict or a list: %s"
                        % (var_list,))
    out = {}
    seen = set()
    for v in var_list:
        if _is_saveable_object(v):
            if v.name in out:
                raise ValueError("At least two variables have the same name: %s"
                                 % v.name)
            out[v.name] = v
            continue
        if isinstance(v, (list, tuple, variables.PartitionedVariable)):
            parts = _slices_of(v)
            name = parts[0]._get_save_slice_info().full_name
            if name in out:
                raise ValueError("At least two variables have the same name: %s" % name)
            seen.update(p._ref() for p in parts)
            out[name] = parts
            continue
        ref = _as_ref(v, v)
        if ref in seen:
            continue
        seen.add(ref)
        info = (v._get_save_slice_info() if isinstance(v, variables.Variable) else None)
        if info:
            name = info.full_name
            if name in out and not isinstance(out[name], list):
                raise ValueError("Mixing slices and non-slices with the same name: %s"
                                 % name)
            out.setdefault(name, []).append(v)
            continue
        name = ref.op.name
        if name in out:
            if isinstance(out[name], list):
                raise ValueError("Mixing slices and non-slices with the same name: %s"
                                 % name)
            raise ValueError("At least two variables have the same name: %s" % name)
        out[name] = ref
    return out


def _is_saveable_object(value):
    """True for a saveable that is not a variable (e.g. an iterator's, from
    tf.data.experimental.make_saveable_from_iterator): it has `name`,
    `dtype`, `device`, `ref` (a tensor to colocate with), tensor_to_save()
    and restore(tensor) -> [ops]."""
    return getattr(value, "_runnel_saveable", False)


class _RenamedSaveable:
    """A saveable object under the key a var_list dict gave it."""

    def __init__(self, name, inner):
        self.name = name
        self._inner = inner
        self.ref = inner.ref
        self.dtype = inner.dtype
        self.device = inner.device

    def tensor_to_save(self):
        return self._inner.tensor_to_save()

    def restore(self, restored):
        return self._inner.restore(restored)


def _make_saveable(name, value):
    if _is_saveable_object(value):
        return value if value.name == name else _RenamedSaveable(name, value)
    if isinstance(value, list):
        return _SlicedSaveable(name, value)
    return _Saveable(name, value)


def _all_saveable_objects(scope=None):
    return (ops.get_collection(ops.GraphKeys.GLOBAL_VARIABLES, scope) +
            ops.get_collection(ops.GraphKeys.SAVEABLE_OBJECTS, scope))


# ---------------------------------------------------------------- graph

def _save_op(filename, saveables):
    tensors = [s.tensor_to_save() for s in saveables]
    with ops.name_scope("SaveV2") as scope:
        names = constant_op.constant([s.name for s in saveables], name="tensor_names")
        slices = constant_op.constant([""] * len(saveables), name="shape_and_slices")
        return gen_ops.save_v2(filename, names, slices, tensors, name=scope)


def _add_save_ops(filename, saveables):
    save = _save_op(filename, saveables)
    return control_flow_ops.with_dependencies([save], filename)


def _add_restore_ops(filename, saveables, name="restore_all"):
    with ops.device("/device:CPU:0"):
        with ops.name_scope("RestoreV2") as scope:
            names = constant_op.constant([s.name for s in saveables], name="tensor_names")
            slices = constant_op.constant([""] * len(saveables), name="shape_and_slices")
            restored = gen_ops.restore_v2(filename, names, slices,
                                          dtypes=[s.dtype for s in saveables], name=scope)
    if not isinstance(restored, (list, tuple)):
        restored = [restored]
    assigns = []
    for s, t in zip(saveables, restored):
        with ops.colocate_with(s.ref.op):
            assigns.extend(s.restore(t))
    return control_flow_ops.group(*assigns, name=name)


def _group_by_devices(saveables):
    per_device = {}
    for s in saveables:
        per_device.setdefault(s.device, []).append(s)
    return sorted(per_device.items(), key=lambda kv: kv[0])


def _add_sharded_save_ops(prefix, per_device):
    import uuid
    with ops.device("/device:CPU:0"):
        tmp = gen_ops.string_join([prefix, "_temp_%s/part" % uuid.uuid4().hex])
    num_shards = constant_op.constant(len(per_device), name="num_shards")
    shard_prefixes, saves = [], []
    last_device = None
    for shard, (device, saveables) in enumerate(per_device):
        last_device = device
        with ops.device(device):
            f = gen_ops.sharded_filename(tmp, shard, num_shards)
            shard_prefixes.append(f)
            saves.append(_add_save_ops(f, saveables))
    with ops.control_dependencies([s.op for s in saves]):
        with ops.device(last_device):
            merge = gen_ops.merge_v2_checkpoints(array_ops.stack(shard_prefixes), prefix,
                                                 delete_old_dirs=True)
            with ops.control_dependencies([merge]):
                return gen_ops.identity(prefix)


def _add_sharded_restore_ops(filename, per_device):
    restores = []
    for device, saveables in per_device:
        with ops.device(device):
            restores.append(_add_restore_ops(filename, saveables, name="restore_shard"))
    return control_flow_ops.group(*restores, name="restore_all")


def _prepend_name_scope(name, scope):
    if not scope:
        return name
    scope = scope.rstrip("/")
    if name.startswith("^"):
        return "^" + scope + "/" + name[1:]
    return scope + "/" + name


# ---------------------------------------------------------------- Saver

class Saver:
    """Saves and restores variables (tf.train.Saver, TF 1.x)."""

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None,
                 restore_sequentially=False, saver_def=None, builder=None,
                 defer_build=False, allow_empty=False,
                 write_version=saver_pb2.SaverDef.V2, pad_step_number=False,
                 save_relative_paths=False, filename=None):
        if defer_build and var_list:
            raise ValueError("If `var_list` is provided then build cannot be deferred. "
                             "Either set defer_build=False or var_list=None.")
        if reshape:
            raise _missing("Saver(reshape=True): restoring into variables of another "
                           "shape is not supported by Runnel yet")
        if builder is not None:
            raise _missing("Saver(builder=...): custom BaseSaverBuilders are not "
                           "supported by Runnel")
        if write_version != saver_pb2.SaverDef.V2:
            raise _missing("Saver(write_version=%s): Runnel writes V2 checkpoints only"
                           % write_version)
        self._var_list = var_list
        self._sharded = sharded
        self._max_to_keep = max_to_keep
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._name = name
        self._restore_sequentially = restore_sequentially
        self.saver_def = saver_def
        self._allow_empty = allow_empty
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._filename = filename
        self._is_built = False
        self._is_empty = False
        self._last_checkpoints = []        # [(path, time)]
        self._checkpoints_to_be_deleted = []
        self._next_checkpoint_time = time.time() + keep_checkpoint_every_n_hours * 3600
        if not defer_build:
            self.build()
        if self.saver_def:
            self._check_saver_def()

    def build(self):
        """Adds the save and restore ops (done by the constructor unless
        defer_build)."""
        if self._is_built:
            return
        self._is_built = True
        if self.saver_def is not None:
            if self._name:
                # As in TF, `name` is then the scope the SaverDef was imported under.
                d = saver_pb2.SaverDef()
                d.CopyFrom(self.saver_def)
                d.filename_tensor_name = _prepend_name_scope(d.filename_tensor_name,
                                                             self._name)
                d.save_tensor_name = _prepend_name_scope(d.save_tensor_name, self._name)
                d.restore_op_name = _prepend_name_scope(d.restore_op_name, self._name)
                self.saver_def = d
            return
        var_list = self._var_list
        if var_list is None:
            var_list = _all_saveable_objects()
        if not var_list:
            if self._allow_empty:
                self._is_empty = True
                return
            raise ValueError("No variables to save")
        names_to_refs = _op_list_to_dict(var_list)
        saveables = [_make_saveable(n, r) for n, r in sorted(names_to_refs.items())]
        graph = saveables[0].ref.graph
        with graph.as_default(), graph.control_dependencies(None), \
                ops.name_scope(self._name, "save", [s.ref for s in saveables]):
            # TF's two placeholders: "filename" (default `filename` or "model")
            # and "Const", the one the SaverDef names.
            with ops.name_scope("filename") as fscope:
                init = constant_op.constant(self._filename or "model", name="input")
            filename_tensor = array_ops.placeholder_with_default(init, shape=(), name=fscope)
            filename_tensor = array_ops.placeholder_with_default(filename_tensor, shape=(),
                                                                 name="Const")
            if self._sharded:
                per_device = _group_by_devices(saveables)
                save_tensor = _add_sharded_save_ops(filename_tensor, per_device)
                restore_op = _add_sharded_restore_ops(filename_tensor, per_device)
            else:
                save_tensor = _add_save_ops(filename_tensor, saveables)
                restore_op = _add_restore_ops(filename_tensor, saveables)
        self.saver_def = saver_pb2.SaverDef(
            filename_tensor_name=filename_tensor.name,
            save_tensor_name=save_tensor.name,
            restore_op_name=restore_op.name,
            max_to_keep=self._max_to_keep,
            sharded=self._sharded,
            keep_checkpoint_every_n_hours=self._keep_checkpoint_every_n_hours,
            version=saver_pb2.SaverDef.V2)
        self._check_saver_def()

    def _check_saver_def(self):
        if not isinstance(self.saver_def, saver_pb2.SaverDef):
            raise ValueError("saver_def must be a saver_pb2.SaverDef: %s" % self.saver_def)
        if not self.saver_def.save_tensor_name:
            raise ValueError("saver_def must specify the save_tensor_name: %s"
                             % str(self.saver_def))
        if not self.saver_def.restore_op_name:
            raise ValueError("saver_def must specify the restore_op_name: %s"
                             % str(self.saver_def))

    # -- protos
    def as_saver_def(self):
        return self.saver_def

    def to_proto(self, export_scope=None):
        if export_scope is None:
            return self.saver_def
        prefix = export_scope.rstrip("/") + "/"
        names = [self.saver_def.filename_tensor_name, self.saver_def.save_tensor_name,
                 self.saver_def.restore_op_name]
        if not all(n.startswith(prefix) for n in names):
            return None
        d = saver_pb2.SaverDef()
        d.CopyFrom(self.saver_def)
        d.filename_tensor_name = names[0][len(prefix):]
        d.save_tensor_name = names[1][len(prefix):]
        d.restore_op_name = names[2][len(prefix):]
        return d

    @staticmethod
    def from_proto(saver_def, import_scope=None):
        return Saver(saver_def=saver_def, name=import_scope)

    # -- checkpoints kept
    @property
    def last_checkpoints(self):
        """The paths of the checkpoints kept, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints):
        if not isinstance(last_checkpoints, list):
            raise AssertionError("last_checkpoints: expected a list, got %r"
                                 % (last_checkpoints,))
        self._last_checkpoints = [(p, None) for p in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time):
        self._last_checkpoints = list(last_checkpoints_with_time)

    def recover_last_checkpoints(self, checkpoint_paths):
        """Adopts existing checkpoints (after a restart) so max_to_keep
        counts them."""
        times = get_checkpoint_mtimes(checkpoint_paths)
        self.set_last_checkpoints_with_time(list(zip(checkpoint_paths, times)))

    def _record_last_checkpoint(self, path):
        if not self.saver_def.max_to_keep:
            return
        self._last_checkpoints = [(p, t) for p, t in self._last_checkpoints if p != path]
        self._last_checkpoints.append((path, time.time()))
        if len(self._last_checkpoints) > self.saver_def.max_to_keep:
            self._checkpoints_to_be_deleted.append(self._last_checkpoints.pop(0))

    def _maybe_delete_old_checkpoints(self, meta_graph_suffix="meta"):
        if not self._checkpoints_to_be_deleted:
            return
        path, t = self._checkpoints_to_be_deleted.pop(0)
        if t is not None and t > self._next_checkpoint_time:
            self._next_checkpoint_time += (self.saver_def.keep_checkpoint_every_n_hours *
                                           3600)
            return
        remove_checkpoint(path, saver_pb2.SaverDef.V2, meta_graph_suffix)

    # -- save / restore
    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False, save_debug_info=False):
        """Writes the checkpoint `save_path` (+ "-<global_step>"), updates
        the state file `latest_filename` (default "checkpoint") and writes
        the meta graph; returns the checkpoint's path."""
        if not self._is_built:
            raise RuntimeError("`build()` should be called before save if "
                               "defer_build==True")
        if latest_filename is None:
            latest_filename = "checkpoint"
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        save_path = os.fspath(save_path)
        if global_step is not None:
            if not isinstance(global_step, int):
                global_step = training_util.global_step(sess, global_step)
            checkpoint_file = ("%s-%08d" if self._pad_step_number else "%s-%d") % (
                save_path, global_step)
        else:
            checkpoint_file = save_path
            if os.path.basename(save_path) == latest_filename and not self._sharded:
                raise ValueError("'latest_filename' collides with 'save_path': '%s' and "
                                 "'%s'" % (latest_filename, save_path))
        save_path_parent = os.path.dirname(save_path)
        if save_path_parent and not os.path.isdir(save_path_parent):
            raise ValueError("Parent directory of {} doesn't exist, can't save."
                             .format(save_path))
        if self._is_empty:
            return None
        model_checkpoint_path = sess.run(self.saver_def.save_tensor_name,
                                         {self.saver_def.filename_tensor_name:
                                          checkpoint_file})
        if isinstance(model_checkpoint_path, bytes):
            model_checkpoint_path = model_checkpoint_path.decode()
        if write_state:
            self._record_last_checkpoint(model_checkpoint_path)
            _update_checkpoint_state(save_path_parent, model_checkpoint_path,
                                     self.last_checkpoints, latest_filename,
                                     self._save_relative_paths)
            self._maybe_delete_old_checkpoints(meta_graph_suffix)
        if write_meta_graph:
            with sess.graph.as_default():
                self.export_meta_graph(checkpoint_file + "." + meta_graph_suffix,
                                       strip_default_attrs=strip_default_attrs)
        return model_checkpoint_path

    def restore(self, sess, save_path):
        """Runs the restore op from the checkpoint at `save_path`. ValueError
        if there is none; a NotFoundError naming the missing key, an
        InvalidArgumentError for a dtype/shape mismatch."""
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        save_path = os.fspath(save_path)
        if not checkpoint_exists(save_path):
            raise ValueError("The passed save_path is not a valid checkpoint: " + save_path)
        try:
            sess.run(self.saver_def.restore_op_name,
                     {self.saver_def.filename_tensor_name: save_path})
        except errors.NotFoundError as err:
            raise type(err)(err.node_def, err.op, _restore_error(
                "a Variable name or other graph key that is missing", err)) from None
        except errors.InvalidArgumentError as err:
            raise type(err)(err.node_def, err.op, _restore_error(
                "a mismatch between the current graph and the graph", err)) from None

    def export_meta_graph(self, filename=None, collection_list=None, as_text=False,
                          export_scope=None, clear_devices=False,
                          clear_extraneous_savers=False, strip_default_attrs=False,
                          save_debug_info=False):
        """The default graph's MetaGraphDef with this Saver's SaverDef
        (written to `filename` when given)."""
        return export_meta_graph(filename=filename, saver_def=self.saver_def,
                                 collection_list=collection_list, as_text=as_text,
                                 export_scope=export_scope, clear_devices=clear_devices,
                                 strip_default_attrs=strip_default_attrs)


def _restore_error(what, err):
    return ("Restoring from checkpoint failed. This is most likely due to %s from the "
            "checkpoint. Please ensure that you have not altered the graph expected "
            "based on the checkpoint. Original error:\n\n%s" % (what, err.message))


# ---------------------------------------------------------------- checkpoint files

def _state_path(save_dir, latest_filename):
    return os.path.join(save_dir, latest_filename or "checkpoint")


def generate_checkpoint_state_proto(save_dir, model_checkpoint_path,
                                    all_model_checkpoint_paths=None,
                                    all_model_checkpoint_timestamps=None,
                                    last_preserved_timestamp=None):
    """A CheckpointState naming `model_checkpoint_path` last in the list;
    relative paths are made relative to a relative save_dir."""
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    if not os.path.isabs(save_dir):
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, save_dir)
        paths = [p if os.path.isabs(p) else os.path.relpath(p, save_dir) for p in paths]
    state = checkpoint_state_pb2.CheckpointState(
        model_checkpoint_path=model_checkpoint_path,
        all_model_checkpoint_paths=paths)
    if all_model_checkpoint_timestamps:
        state.all_model_checkpoint_timestamps.extend(all_model_checkpoint_timestamps)
    if last_preserved_timestamp is not None:
        state.last_preserved_timestamp = last_preserved_timestamp
    return state


def _update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths,
                             latest_filename, save_relative_paths,
                             all_model_checkpoint_timestamps=None,
                             last_preserved_timestamp=None):
    state_file = _state_path(save_dir, latest_filename)
    if save_relative_paths:
        def rel(p):
            return os.path.relpath(p, save_dir) if os.path.isabs(p) else p
        model_checkpoint_path = rel(model_checkpoint_path)
        all_model_checkpoint_paths = [rel(p) for p in all_model_checkpoint_paths or []]
        state = checkpoint_state_pb2.CheckpointState(
            model_checkpoint_path=model_checkpoint_path,
            all_model_checkpoint_paths=all_model_checkpoint_paths)
        if not state.all_model_checkpoint_paths or \
                state.all_model_checkpoint_paths[-1] != model_checkpoint_path:
            state.all_model_checkpoint_paths.append(model_checkpoint_path)
    else:
        state = generate_checkpoint_state_proto(
            save_dir, model_checkpoint_path, all_model_checkpoint_paths,
            all_model_checkpoint_timestamps, last_preserved_timestamp)
    if state_file == state.model_checkpoint_path:
        raise RuntimeError("Save path '%s' conflicts with path used for checkpoint "
                           "state.  Please use a different save path." %
                           model_checkpoint_path)
    tmp = state_file + ".tmp%d" % os.getpid()
    with open(tmp, "w") as f:
        f.write(text_format.MessageToString(state))
    os.replace(tmp, state_file)


def update_checkpoint_state(save_dir, model_checkpoint_path,
                            all_model_checkpoint_paths=None, latest_filename=None,
                            all_model_checkpoint_timestamps=None,
                            last_preserved_timestamp=None):
    """Writes the CheckpointState file (text format) in save_dir."""
    _update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths,
                             latest_filename, False, all_model_checkpoint_timestamps,
                             last_preserved_timestamp)


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The CheckpointState in checkpoint_dir (relative paths joined to it),
    or None if there is no (parseable) state file."""
    checkpoint_dir = os.fspath(checkpoint_dir)
    path = _state_path(checkpoint_dir, latest_filename)
    if not os.path.isfile(path):
        return None
    state = checkpoint_state_pb2.CheckpointState()
    try:
        with open(path) as f:
            text_format.Merge(f.read(), state)
    except text_format.ParseError:
        return None
    if not state.model_checkpoint_path:
        raise ValueError("Invalid checkpoint state loaded from " + checkpoint_dir)
    if not os.path.isabs(state.model_checkpoint_path):
        state.model_checkpoint_path = os.path.join(checkpoint_dir,
                                                   state.model_checkpoint_path)
    for i, p in enumerate(state.all_model_checkpoint_paths):
        if not os.path.isabs(p):
            state.all_model_checkpoint_paths[i] = os.path.join(checkpoint_dir, p)
    return state


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The newest checkpoint's path in checkpoint_dir's state file, or None
    (no state file, or its checkpoint's files are gone)."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state and state.model_checkpoint_path and \
            checkpoint_exists(state.model_checkpoint_path):
        return state.model_checkpoint_path
    return None


def checkpoint_exists(checkpoint_prefix):
    """True if a V2 checkpoint (its .index) or a V1 file is at the prefix."""
    checkpoint_prefix = os.fspath(checkpoint_prefix)
    return bool(glob.glob(glob.escape(checkpoint_prefix) + ".index") or
                glob.glob(checkpoint_prefix + ".index") or
                os.path.isfile(checkpoint_prefix))


def get_checkpoint_mtimes(checkpoint_prefixes):
    """The modification times of the checkpoints' index files."""
    out = []
    for p in checkpoint_prefixes:
        for f in (p + ".index", p):
            if os.path.isfile(f):
                out.append(os.path.getmtime(f))
                break
    return out


def remove_checkpoint(checkpoint_prefix, checkpoint_format_version=saver_pb2.SaverDef.V2,
                      meta_graph_suffix="meta"):
    """Deletes a checkpoint's index, data files and meta graph."""
    files = [checkpoint_prefix + ".index", checkpoint_prefix + "." + meta_graph_suffix]
    files += glob.glob(glob.escape(checkpoint_prefix) + ".data-?????-of-?????")
    for f in files:
        try:
            os.remove(f)
        except FileNotFoundError:
            pass


# ---------------------------------------------------------------- meta graphs

_VARIABLE_COLLECTIONS = (ops.GraphKeys.GLOBAL_VARIABLES,
                         ops.GraphKeys.TRAINABLE_VARIABLES,
                         ops.GraphKeys.LOCAL_VARIABLES,
                         ops.GraphKeys.MODEL_VARIABLES,
                         ops.GraphKeys.MOVING_AVERAGE_VARIABLES,
                         ops.GraphKeys.METRIC_VARIABLES,
                         ops.GraphKeys.CONCATENATED_VARIABLES)


def _strip_scope(name, export_scope):
    if not export_scope:
        return name
    prefix = export_scope.rstrip("/") + "/"
    if name.startswith("^" + prefix):
        return "^" + name[len(prefix) + 1:]
    return name[len(prefix):] if name.startswith(prefix) else name


def _variable_to_proto(v, export_scope=None):
    """A tf.Variable as TF's VariableDef."""
    d = meta_graph_pb2.VariableDef()
    d.variable_name = _strip_scope(v.name, export_scope)
    d.initial_value_name = _strip_scope(v.initial_value.name, export_scope)
    d.initializer_name = _strip_scope(v.initializer.name, export_scope)
    d.snapshot_name = _strip_scope(v.value().name, export_scope)
    d.trainable = v.trainable
    return d


def _variable_from_proto(d, graph, import_scope=None):
    """A tf.Variable over the nodes a VariableDef names (TF's
    Variable(variable_def=...))."""
    if d.is_resource:
        raise _missing("importing a resource variable (%s) from a meta graph: resource "
                       "variables are not in Runnel's Python API yet" % d.variable_name)
    v = variables.Variable.__new__(variables.Variable)
    get = graph.as_graph_element
    v._variable = get(_prepend_name_scope(d.variable_name, import_scope))
    v._initializer_op = get(_prepend_name_scope(d.initializer_name, import_scope))
    v._initial_value = (get(_prepend_name_scope(d.initial_value_name, import_scope))
                        if d.initial_value_name else None)
    v._snapshot = (get(_prepend_name_scope(d.snapshot_name, import_scope))
                   if d.snapshot_name else v._variable)
    v._trainable = d.trainable
    v._constraint = None
    v._graph = graph
    v._save_slice_info = None
    return v


def _stripped_op_list(graph_def):
    used = sorted({n.op for n in graph_def.node} |
                  {n.op for f in graph_def.library.function for n in f.node_def})
    lst = op_def_pb2.OpList()
    defs = ops.op_defs()
    for name in used:
        if name in defs:
            lst.op.add().CopyFrom(defs[name])
    return lst


def _add_collection_def(mgd, key, items, export_scope):
    col = meta_graph_pb2.CollectionDef()
    if key in _VARIABLE_COLLECTIONS or all(isinstance(x, variables.Variable)
                                           for x in items):
        if not all(isinstance(x, variables.Variable) for x in items):
            return
        col.bytes_list.value.extend(_variable_to_proto(x, export_scope).SerializeToString()
                                    for x in items)
    elif all(isinstance(x, (ops.Tensor, ops.Operation)) for x in items):
        col.node_list.value.extend(_strip_scope(x.name, export_scope) for x in items)
    elif all(isinstance(x, bool) for x in items):
        col.int64_list.value.extend(int(x) for x in items)
    elif all(isinstance(x, int) for x in items):
        col.int64_list.value.extend(items)
    elif all(isinstance(x, float) for x in items):
        col.float_list.value.extend(items)
    elif all(isinstance(x, (bytes, str)) for x in items):
        col.bytes_list.value.extend(x.encode() if isinstance(x, str) else x for x in items)
    else:
        return  # As TF does for objects it cannot serialize: the collection is skipped.
    if items:
        mgd.collection_def[key].CopyFrom(col)


def export_meta_graph(filename=None, meta_info_def=None, graph_def=None, saver_def=None,
                      collection_list=None, as_text=False, graph=None, export_scope=None,
                      clear_devices=False, clear_extraneous_savers=False,
                      strip_default_attrs=False, save_debug_info=False, **kwargs):
    """The MetaGraphDef of `graph` (default: the default graph):
    meta_info_def (stripped_op_list, tags), graph_def, saver_def and the
    collections (variables as VariableDefs, ops and tensors by name);
    written to `filename` (binary, or text if as_text) when given."""
    if kwargs:
        raise _missing("export_meta_graph(%s)" % ", ".join(sorted(kwargs)))
    graph = graph or ops.get_default_graph()
    mgd = meta_graph_pb2.MetaGraphDef()
    if meta_info_def is not None:
        mgd.meta_info_def.CopyFrom(meta_info_def)
    if graph_def is None:
        graph_def = graph.as_graph_def(add_shapes=True)
    gd = mgd.graph_def
    gd.CopyFrom(graph_def)
    if export_scope:
        prefix = export_scope.rstrip("/") + "/"
        kept = [n for n in gd.node if n.name.startswith(prefix)]
        del gd.node[:]
        for n in kept:
            n.name = n.name[len(prefix):]
            n.input[:] = [_strip_scope(i, export_scope) for i in n.input]
            gd.node.add().CopyFrom(n)
    if clear_devices:
        for n in gd.node:
            n.device = ""
    mgd.meta_info_def.stripped_op_list.CopyFrom(_stripped_op_list(gd))
    if not mgd.meta_info_def.meta_graph_version:
        mgd.meta_info_def.meta_graph_version = "v%d" % gd.versions.producer
    if saver_def is not None:
        mgd.saver_def.CopyFrom(saver_def)
    keys = collection_list if collection_list is not None else \
        graph.get_all_collection_keys()
    for key in keys:
        items = graph.get_collection(key)
        if export_scope:
            items = [x for x in items if not hasattr(x, "name") or
                     x.name.startswith(export_scope.rstrip("/") + "/")]
        _add_collection_def(mgd, key, items, export_scope)
    if filename:
        d = os.path.dirname(filename)
        if d:
            os.makedirs(d, exist_ok=True)
        if as_text:
            with open(filename, "w") as f:
                f.write(text_format.MessageToString(mgd))
        else:
            with open(filename, "wb") as f:
                f.write(mgd.SerializeToString())
    return mgd


def read_meta_graph_file(filename):
    """A MetaGraphDef file, binary or text format."""
    filename = os.fspath(filename)
    if not os.path.isfile(filename):
        raise IOError("File %s does not exist." % filename)
    with open(filename, "rb") as f:
        data = f.read()
    mgd = meta_graph_pb2.MetaGraphDef()
    try:
        mgd.ParseFromString(data)
        return mgd
    except Exception:  # noqa: BLE001 - not binary: try the text format
        pass
    text_format.Merge(data.decode("utf-8"), mgd)
    return mgd


def import_scoped_meta_graph(meta_graph_or_file, clear_devices=False, graph=None,
                             import_scope=None, input_map=None):
    """Adds the meta graph's nodes (under import_scope) and collections to
    `graph`; returns {variable name: Variable} of the imported variables."""
    if isinstance(meta_graph_or_file, meta_graph_pb2.MetaGraphDef):
        mgd = meta_graph_or_file
    else:
        mgd = read_meta_graph_file(meta_graph_or_file)
    graph = graph or ops.get_default_graph()
    gd = mgd.graph_def
    if clear_devices:
        gd = type(gd)()
        gd.CopyFrom(mgd.graph_def)
        for n in gd.node:
            n.device = ""
    with graph.as_default():
        importer.import_graph_def(gd, input_map=input_map, name=import_scope or "")
    imported = {}
    by_bytes = {}
    for key in sorted(mgd.collection_def):
        col = mgd.collection_def[key]
        kind = col.WhichOneof("kind")
        if kind == "node_list":
            for name in col.node_list.value:
                graph.add_to_collection(key, graph.as_graph_element(
                    _prepend_name_scope(name, import_scope)))
        elif kind == "bytes_list" and key in _VARIABLE_COLLECTIONS:
            for raw in col.bytes_list.value:
                if raw not in by_bytes:
                    d = meta_graph_pb2.VariableDef()
                    d.ParseFromString(raw)
                    by_bytes[raw] = _variable_from_proto(d, graph, import_scope)
                v = by_bytes[raw]
                if key == ops.GraphKeys.TRAINABLE_VARIABLES:
                    v._trainable = True  # VariableDefs before TF 1.4 lack the field.
                graph.add_to_collection(key, v)
                imported[v.op.name[len(import_scope.rstrip("/")) + 1:]
                         if import_scope else v.op.name] = v
        elif kind == "bytes_list":
            for raw in col.bytes_list.value:
                graph.add_to_collection(key, raw)
        elif kind == "int64_list":
            for x in col.int64_list.value:
                graph.add_to_collection(key, int(x))
        elif kind == "float_list":
            for x in col.float_list.value:
                graph.add_to_collection(key, float(x))
    return imported


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None,
                      **kwargs):
    """Imports a MetaGraphDef (a proto or a file) into the default graph and
    returns a Saver over its SaverDef (a new Saver over its variables when
    it has none; None when it has neither)."""
    input_map = kwargs.pop("input_map", None)
    if kwargs.pop("return_elements", None) is not None:
        raise _missing("import_meta_graph(return_elements=...)")
    if isinstance(meta_graph_or_file, meta_graph_pb2.MetaGraphDef):
        mgd = meta_graph_or_file
    else:
        mgd = read_meta_graph_file(meta_graph_or_file)
    import_scoped_meta_graph(mgd, clear_devices=clear_devices, import_scope=import_scope,
                             input_map=input_map)
    if mgd.HasField("saver_def"):
        return Saver(saver_def=mgd.saver_def, name=import_scope, **kwargs)
    if _all_saveable_objects(import_scope):
        return Saver(**kwargs)
    return None


__tf_train_exports__ = {
    "Saver": Saver,
    "SaverDef": saver_pb2.SaverDef,
    "CheckpointState": checkpoint_state_pb2.CheckpointState,
    "latest_checkpoint": latest_checkpoint,
    "checkpoint_exists": checkpoint_exists,
    "get_checkpoint_state": get_checkpoint_state,
    "get_checkpoint_mtimes": get_checkpoint_mtimes,
    "generate_checkpoint_state_proto": generate_checkpoint_state_proto,
    "update_checkpoint_state": update_checkpoint_state,
    "remove_checkpoint": remove_checkpoint,
    "export_meta_graph": export_meta_graph,
    "import_meta_graph": import_meta_graph,
}
