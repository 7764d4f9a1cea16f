"""tf.saved_model (TF 1.x): the v1 loader, the SavedModelBuilder,
simple_save, and the tag/signature constants and helpers.

loader.load(sess, tags, export_dir) finds the meta graph whose tag set is
`tags` in export_dir/saved_model.pb (or .pbtxt), imports it into
sess.graph, restores export_dir/variables/variables through its SaverDef,
then runs its init op (the "__saved_model_init_op" signature, or the
"saved_model_main_op"/"legacy_init_op" collection) feeding the asset
placeholders their files' paths, and returns the MetaGraphDef. As in TF it
also loads SavedModels that TF 2 wrote (their graphs call functions and
restore through them), provided Runnel's core runs the ops they use."""

import os

from google.protobuf import text_format

from runnel.framework import ops
from runnel.proto import meta_graph_pb2
from runnel.proto import saved_model_pb2
from runnel.proto import saver_pb2
from runnel.training import saver as saver_lib

SAVED_MODEL_SCHEMA_VERSION = 1
SAVED_MODEL_FILENAME_PB = "saved_model.pb"
SAVED_MODEL_FILENAME_PBTXT = "saved_model.pbtxt"
VARIABLES_DIRECTORY = "variables"
VARIABLES_FILENAME = "variables"
ASSETS_DIRECTORY = "assets"
ASSETS_KEY = "saved_model_assets"
MAIN_OP_KEY = "saved_model_main_op"
LEGACY_INIT_OP_KEY = "legacy_init_op"
INIT_OP_SIGNATURE_KEY = "__saved_model_init_op"


def _missing(what):
    from runnel._compat_namespaces import MissingFeatureError
    return MissingFeatureError(what)


# ---------------------------------------------------------------- constants

class tag_constants:  # noqa: N801 - TF's module name
    SERVING = "serve"
    TRAINING = "train"
    EVAL = "eval"
    GPU = "gpu"
    TPU = "tpu"


class signature_constants:  # noqa: N801 - TF's module name
    DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"
    CLASSIFY_INPUTS = "inputs"
    CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
    CLASSIFY_OUTPUT_CLASSES = "classes"
    CLASSIFY_OUTPUT_SCORES = "scores"
    PREDICT_INPUTS = "inputs"
    PREDICT_METHOD_NAME = "tensorflow/serving/predict"
    PREDICT_OUTPUTS = "outputs"
    REGRESS_INPUTS = "inputs"
    REGRESS_METHOD_NAME = "tensorflow/serving/regress"
    REGRESS_OUTPUTS = "outputs"


# ---------------------------------------------------------------- signatures

def build_tensor_info(tensor):
    """A TensorInfo naming a dense tensor, with its dtype and shape."""
    if isinstance(tensor, ops.IndexedSlices) or hasattr(tensor, "indices") and \
            not isinstance(tensor, ops.Tensor):
        raise _missing("build_tensor_info for sparse tensors is not in Runnel yet")
    tensor = ops.convert_to_tensor(tensor)
    info = meta_graph_pb2.TensorInfo(name=tensor.name,
                                     dtype=tensor.dtype.base_dtype.as_datatype_enum)
    info.tensor_shape.CopyFrom(tensor.shape.as_proto())
    return info


def get_tensor_from_tensor_info(tensor_info, graph=None, import_scope=None):
    graph = graph or ops.get_default_graph()
    if tensor_info.WhichOneof("encoding") != "name":
        raise _missing("get_tensor_from_tensor_info for sparse TensorInfo")
    return graph.get_tensor_by_name(saver_lib._prepend_name_scope(tensor_info.name,
                                                                  import_scope))


def build_signature_def(inputs=None, outputs=None, method_name=None):
    sig = meta_graph_pb2.SignatureDef()
    for k, v in (inputs or {}).items():
        sig.inputs[k].CopyFrom(v)
    for k, v in (outputs or {}).items():
        sig.outputs[k].CopyFrom(v)
    if method_name is not None:
        sig.method_name = method_name
    return sig


def predict_signature_def(inputs, outputs):
    """A "tensorflow/serving/predict" SignatureDef of {key: tensor} maps."""
    if inputs is None or not inputs:
        raise ValueError("Prediction inputs cannot be None or empty.")
    if outputs is None or not outputs:
        raise ValueError("Prediction outputs cannot be None or empty.")
    return build_signature_def(
        {k: build_tensor_info(t) for k, t in inputs.items()},
        {k: build_tensor_info(t) for k, t in outputs.items()},
        signature_constants.PREDICT_METHOD_NAME)


def is_valid_signature(signature_def):
    if signature_def is None or not signature_def.method_name:
        return False
    return bool(signature_def.outputs) and (
        bool(signature_def.inputs) or
        signature_def.method_name != signature_constants.PREDICT_METHOD_NAME)


# ---------------------------------------------------------------- loading

def _read_saved_model(export_dir):
    export_dir = os.fspath(export_dir)
    pb = os.path.join(export_dir, SAVED_MODEL_FILENAME_PB)
    pbtxt = os.path.join(export_dir, SAVED_MODEL_FILENAME_PBTXT)
    sm = saved_model_pb2.SavedModel()
    if os.path.isfile(pb):
        with open(pb, "rb") as f:
            sm.ParseFromString(f.read())
    elif os.path.isfile(pbtxt):
        with open(pbtxt) as f:
            text_format.Merge(f.read(), sm)
    else:
        raise IOError("SavedModel file does not exist at: %s%s{%s|%s}" %
                      (export_dir, os.path.sep, SAVED_MODEL_FILENAME_PBTXT,
                       SAVED_MODEL_FILENAME_PB))
    return sm


def maybe_saved_model_directory(export_dir):
    """True if export_dir holds a saved_model.pb or saved_model.pbtxt."""
    export_dir = os.fspath(export_dir)
    return any(os.path.isfile(os.path.join(export_dir, f))
               for f in (SAVED_MODEL_FILENAME_PB, SAVED_MODEL_FILENAME_PBTXT))


contains_saved_model = maybe_saved_model_directory


def _asset_feeds(mgd, export_dir, import_scope):
    infos = list(mgd.asset_file_def)
    col = mgd.collection_def.get(ASSETS_KEY)
    if col is not None and col.WhichOneof("kind") == "any_list":
        for any_value in col.any_list.value:
            a = meta_graph_pb2.AssetFileDef()
            any_value.Unpack(a)
            infos.append(a)
    assets_dir = os.path.join(os.fspath(export_dir), ASSETS_DIRECTORY)
    return {saver_lib._prepend_name_scope(a.tensor_info.name, import_scope):
            os.path.join(assets_dir, a.filename) for a in infos}


def _init_op(mgd, import_scope):
    sig = mgd.signature_def.get(INIT_OP_SIGNATURE_KEY)
    if sig is not None and INIT_OP_SIGNATURE_KEY in sig.outputs:
        return saver_lib._prepend_name_scope(sig.outputs[INIT_OP_SIGNATURE_KEY].name,
                                             import_scope)
    for key in (MAIN_OP_KEY, LEGACY_INIT_OP_KEY):
        col = mgd.collection_def.get(key)
        if col is not None and col.node_list.value:
            if len(col.node_list.value) != 1:
                raise RuntimeError("Expected exactly one SavedModel main op. Found: %s"
                                   % list(col.node_list.value))
            return saver_lib._prepend_name_scope(col.node_list.value[0], import_scope)
    return None


def load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
    """Loads the meta graph tagged `tags` into sess.graph, restores its
    variables, runs its init op; returns the MetaGraphDef (tf.saved_model.
    loader.load)."""
    sm = _read_saved_model(export_dir)
    want = set(tags)
    mgd = None
    for m in sm.meta_graphs:
        if set(m.meta_info_def.tags) == want:
            mgd = m
            break
    if mgd is None:
        available = [list(m.meta_info_def.tags) for m in sm.meta_graphs]
        raise RuntimeError(
            "MetaGraphDef associated with tags " + str(list(tags)).strip("[]") +
            " could not be found in SavedModel. To inspect available tag-sets in the "
            "SavedModel, please use the SavedModel CLI: `saved_model_cli`\n"
            "available_tags: " + str(available))
    with sess.graph.as_default():
        saver = saver_lib.import_meta_graph(mgd, import_scope=import_scope,
                                            **saver_kwargs)
        variables_path = os.path.join(os.fspath(export_dir), VARIABLES_DIRECTORY,
                                      VARIABLES_FILENAME)
        if saver is not None:
            saver.restore(sess, variables_path)
        init = _init_op(mgd, import_scope)
        if init is not None:
            sess.run(init, feed_dict=_asset_feeds(mgd, export_dir, import_scope))
    return mgd


# ---------------------------------------------------------------- building

class SavedModelBuilder:
    """Writes a v1 SavedModel: meta graphs tagged by tag sets, the first
    with the session's variables (tf.saved_model.builder.SavedModelBuilder)."""

    def __init__(self, export_dir):
        export_dir = os.fspath(export_dir)
        if os.path.exists(export_dir):
            if os.listdir(export_dir):
                raise AssertionError(
                    "Export directory already exists, and isn't empty. Please choose a "
                    "different export directory, or delete all the contents of the "
                    "specified directory: %s" % export_dir)
        else:
            os.makedirs(export_dir)
        self._export_dir = export_dir
        self._saved_model = saved_model_pb2.SavedModel(
            saved_model_schema_version=SAVED_MODEL_SCHEMA_VERSION)
        self._has_saved_variables = False

    def _meta_graph(self, saver, tags, signature_def_map, assets_collection,
                    main_op, legacy_init_op, clear_devices, strip_default_attrs):
        if assets_collection:
            raise _missing("SavedModelBuilder: assets_collection (asset files) is not "
                           "supported by Runnel yet")
        if main_op is not None and legacy_init_op is not None:
            raise ValueError("Both main_op and legacy_init_op are set; set one.")
        for key, sig in (signature_def_map or {}).items():
            if not is_valid_signature(sig):
                raise AttributeError("signature_def_map has an invalid signature: %s"
                                     % key)
        init = main_op if main_op is not None else legacy_init_op
        graph = ops.get_default_graph()
        if init is not None:
            if not isinstance(init, ops.Operation):
                raise TypeError("main_op needs to be an Operation: %r" % (init,))
            graph.clear_collection(MAIN_OP_KEY)
            graph.add_to_collection(MAIN_OP_KEY, init)
        mgd = saver_lib.export_meta_graph(
            saver_def=saver.saver_def if saver is not None else None,
            clear_devices=clear_devices, strip_default_attrs=strip_default_attrs)
        mgd.meta_info_def.tags.extend(tags)
        for key, sig in (signature_def_map or {}).items():
            mgd.signature_def[key].CopyFrom(sig)
        self._saved_model.meta_graphs.add().CopyFrom(mgd)

    def add_meta_graph_and_variables(self, sess, tags, signature_def_map=None,
                                     assets_collection=None, legacy_init_op=None,
                                     clear_devices=False, main_op=None,
                                     strip_default_attrs=False, saver=None):
        """Saves the session's variables to variables/variables and adds
        the graph as the meta graph tagged `tags`."""
        if self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has "
                                 "already been saved. Please invoke "
                                 "`add_meta_graph()` instead.")
        with sess.graph.as_default():
            saver = saver or saver_lib.Saver(
                saver_lib._all_saveable_objects(), sharded=True,
                write_version=saver_pb2.SaverDef.V2, allow_empty=True)
            variables_dir = os.path.join(self._export_dir, VARIABLES_DIRECTORY)
            os.makedirs(variables_dir, exist_ok=True)
            saver.save(sess, os.path.join(variables_dir, VARIABLES_FILENAME),
                       write_meta_graph=False, write_state=False)
            self._meta_graph(saver, tags, signature_def_map, assets_collection, main_op,
                             legacy_init_op, clear_devices, strip_default_attrs)
        self._has_saved_variables = True

    def add_meta_graph(self, tags, signature_def_map=None, assets_collection=None,
                       legacy_init_op=None, clear_devices=False, main_op=None,
                       strip_default_attrs=False, saver=None):
        """Adds the default graph as another meta graph (its variables are
        the ones add_meta_graph_and_variables saved)."""
        if not self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has not "
                                 "been saved yet. Please invoke "
                                 "`add_meta_graph_and_variables()` first.")
        saver = saver or saver_lib.Saver(saver_lib._all_saveable_objects(), sharded=True,
                                         allow_empty=True)
        self._meta_graph(saver, tags, signature_def_map, assets_collection, main_op,
                         legacy_init_op, clear_devices, strip_default_attrs)

    def save(self, as_text=False):
        """Writes saved_model.pb (or .pbtxt); returns its path."""
        if as_text:
            path = os.path.join(self._export_dir, SAVED_MODEL_FILENAME_PBTXT)
            with open(path, "w") as f:
                f.write(text_format.MessageToString(self._saved_model))
        else:
            path = os.path.join(self._export_dir, SAVED_MODEL_FILENAME_PB)
            with open(path, "wb") as f:
                f.write(self._saved_model.SerializeToString())
        return path


def simple_save(session, export_dir, inputs, outputs, legacy_init_op=None):
    """A serving SavedModel: tag "serve", signature "serving_default"
    predicting `outputs` from `inputs` ({key: tensor})."""
    sigs = {signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
            predict_signature_def(inputs, outputs)}
    b = SavedModelBuilder(export_dir)
    b.add_meta_graph_and_variables(session, tags=[tag_constants.SERVING],
                                   signature_def_map=sigs, main_op=legacy_init_op,
                                   clear_devices=True)
    b.save()


# ---------------------------------------------------------------- namespace

def module():
    """tf.saved_model with its TF 1.x submodules."""
    from runnel._compat_namespaces import _module
    loader = _module("tf.saved_model.loader", {
        "load": load, "maybe_saved_model_directory": maybe_saved_model_directory})
    builder = _module("tf.saved_model.builder", {"SavedModelBuilder": SavedModelBuilder})
    tags = _module("tf.saved_model.tag_constants", {
        k: v for k, v in vars(tag_constants).items() if k.isupper()})
    sigs = _module("tf.saved_model.signature_constants", {
        k: v for k, v in vars(signature_constants).items() if k.isupper()})
    sig_utils = _module("tf.saved_model.signature_def_utils", {
        "build_signature_def": build_signature_def,
        "predict_signature_def": predict_signature_def,
        "is_valid_signature": is_valid_signature})
    utils = _module("tf.saved_model.utils", {
        "build_tensor_info": build_tensor_info,
        "get_tensor_from_tensor_info": get_tensor_from_tensor_info})
    constants = _module("tf.saved_model.constants", {
        k: v for k, v in globals().items() if k.isupper() and isinstance(v, (str, int))})
    attrs = {
        "loader": loader, "load": load, "builder": builder, "Builder": SavedModelBuilder,
        "tag_constants": tags, "signature_constants": sigs,
        "signature_def_utils": sig_utils, "utils": utils, "constants": constants,
        "simple_save": simple_save, "build_tensor_info": build_tensor_info,
        "build_signature_def": build_signature_def,
        "predict_signature_def": predict_signature_def,
        "is_valid_signature": is_valid_signature,
        "get_tensor_from_tensor_info": get_tensor_from_tensor_info,
        "maybe_saved_model_directory": maybe_saved_model_directory,
        "contains_saved_model": contains_saved_model,
        "SERVING": tag_constants.SERVING, "TRAINING": tag_constants.TRAINING,
        "DEFAULT_SERVING_SIGNATURE_DEF_KEY":
            signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY,
    }
    return _module("tf.saved_model", attrs)

