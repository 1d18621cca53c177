#include "pickle/allowlist.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <string>

namespace zerofold::pickle {

namespace {

// 1. torch.load(weights_only=True)'s default allowlist: the keys of
// _get_allowed_globals() in torch/_weights_only_unpickler.py at pytorch main
// (commit 00f730b66e58, after 2.10), which this list follows. Derived from
// torch 2.6.0's own _get_allowed_globals() (the trixie chroot), then:
// _rebuild_nested_tensor dropped (main no longer lists it); float8_e8m0fnu
// and float4_e2m1fn_x2 added (main's storage._new_dtypes()); uint1..7 and
// int1..7 added (main's loops over them). Everything here is a type, a dtype
// or a rebuild function torch itself calls while loading weights: REDUCE on
// it builds a tensor, a storage, a Size, a device, an OrderedDict, a set, a
// bytearray, a complex, or bytes (_codecs.encode(str, "latin1")).
constexpr std::string_view kTorchWeightsOnly[] = {
    "_codecs.encode", "builtins.bytearray", "builtins.complex", "builtins.set",
    "collections.Counter", "collections.OrderedDict", "torch.BFloat16Storage",
    "torch.BFloat16Tensor", "torch.BoolStorage", "torch.BoolTensor", "torch.ByteStorage",
    "torch.ByteTensor", "torch.CharStorage", "torch.CharTensor", "torch.ComplexDoubleStorage",
    "torch.ComplexFloatStorage", "torch.DoubleStorage", "torch.DoubleTensor", "torch.FloatStorage",
    "torch.FloatTensor", "torch.HalfStorage", "torch.HalfTensor", "torch.IntStorage",
    "torch.IntTensor", "torch.LongStorage", "torch.LongTensor", "torch.QInt32Storage",
    "torch.QInt8Storage", "torch.QUInt2x4Storage", "torch.QUInt4x2Storage", "torch.QUInt8Storage",
    "torch.ShortStorage", "torch.ShortTensor", "torch.Size", "torch.Tensor",
    "torch._tensor._rebuild_from_type_v2", "torch._utils._rebuild_device_tensor_from_cpu_tensor",
    "torch._utils._rebuild_device_tensor_from_numpy",
    "torch._utils._rebuild_meta_tensor_no_storage", "torch._utils._rebuild_parameter",
    "torch._utils._rebuild_parameter_with_state", "torch._utils._rebuild_qtensor",
    "torch._utils._rebuild_sparse_tensor", "torch._utils._rebuild_tensor",
    "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_wrapper_subclass", "torch.bfloat16", "torch.bits16", "torch.bits1x8",
    "torch.bits2x4", "torch.bits4x2", "torch.bits8", "torch.bool", "torch.complex128",
    "torch.complex32", "torch.complex64", "torch.cuda.BFloat16Storage",
    "torch.cuda.BFloat16Tensor", "torch.cuda.BoolStorage", "torch.cuda.BoolTensor",
    "torch.cuda.ByteStorage", "torch.cuda.ByteTensor", "torch.cuda.CharStorage",
    "torch.cuda.CharTensor", "torch.cuda.ComplexDoubleStorage", "torch.cuda.ComplexFloatStorage",
    "torch.cuda.DoubleStorage", "torch.cuda.DoubleTensor", "torch.cuda.FloatStorage",
    "torch.cuda.FloatTensor", "torch.cuda.HalfStorage", "torch.cuda.HalfTensor",
    "torch.cuda.IntStorage", "torch.cuda.IntTensor", "torch.cuda.LongStorage",
    "torch.cuda.LongTensor", "torch.cuda.ShortStorage", "torch.cuda.ShortTensor",
    "torch.cuda.sparse.BFloat16Tensor", "torch.cuda.sparse.ByteTensor",
    "torch.cuda.sparse.CharTensor", "torch.cuda.sparse.DoubleTensor",
    "torch.cuda.sparse.FloatTensor", "torch.cuda.sparse.HalfTensor", "torch.cuda.sparse.IntTensor",
    "torch.cuda.sparse.LongTensor", "torch.cuda.sparse.ShortTensor", "torch.device",
    "torch.float16", "torch.float32", "torch.float4_e2m1fn_x2", "torch.float64",
    "torch.float8_e4m3fn", "torch.float8_e4m3fnuz", "torch.float8_e5m2", "torch.float8_e5m2fnuz",
    "torch.float8_e8m0fnu", "torch.int1", "torch.int16", "torch.int2", "torch.int3", "torch.int32",
    "torch.int4", "torch.int5", "torch.int6", "torch.int64", "torch.int7", "torch.int8",
    "torch.nn.parameter.Parameter", "torch.per_channel_affine",
    "torch.per_channel_affine_float_qparams", "torch.per_channel_symmetric",
    "torch.per_tensor_affine", "torch.per_tensor_symmetric", "torch.qint32", "torch.qint8",
    "torch.quint2x4", "torch.quint4x2", "torch.quint8", "torch.serialization._get_layout",
    "torch.sparse.BFloat16Tensor", "torch.sparse.ByteTensor", "torch.sparse.CharTensor",
    "torch.sparse.DoubleTensor", "torch.sparse.FloatTensor", "torch.sparse.HalfTensor",
    "torch.sparse.IntTensor", "torch.sparse.LongTensor", "torch.sparse.ShortTensor",
    "torch.storage.TypedStorage", "torch.storage.UntypedStorage", "torch.uint1", "torch.uint16",
    "torch.uint2", "torch.uint3", "torch.uint32", "torch.uint4", "torch.uint5", "torch.uint6",
    "torch.uint64", "torch.uint7", "torch.uint8",};

// 2. Plain data in the formats zerofold reads and merges, beyond torch's
// default list: what real writers put in the pickles zerofold parses
// (globals of every fixture, dumped), with what Python's or torch's
// reconstruction of each runs. None imports anything but its own module,
// touches files, processes or the network, or calls a callable the pickle
// supplies.
constexpr std::string_view kPlainData[] = {
    // Python's protocol 0-2 pickles of b"", frozenset and slice call the
    // builtin constructor of an immutable value (zerofold's python_values
    // fixture; torch.save of such values).
    "builtins.bytes", "builtins.frozenset", "builtins.slice",
    // Megatron's common.pt and DeepSpeed's args: NEWOBJ + BUILD, which runs
    // object.__new__ and a __dict__ update (Megatron registers both with
    // torch.serialization.add_safe_globals in megatron/core/safe_globals.py).
    "argparse.Namespace", "types.SimpleNamespace",
    // Megatron's args.exit_signal: an IntEnum looked up by value.
    "signal.Signals",
    // Megatron enums and rerun state (megatron/core/safe_globals.py
    // registers these with add_safe_globals): Enum lookups by value, and a
    // NamedTuple/dataclass rebuilt from its fields.
    "megatron.core.transformer.enums.AttnBackend", "megatron.core.enums.ModelType",
    "megatron.core.rerun_state_machine.RerunDiagnostic",
    "megatron.core.rerun_state_machine.RerunMode", "megatron.core.rerun_state_machine.RerunState",
    // Megatron's dist_checkpointing .metadata: dataclass subclasses of DCP's
    // Metadata and SavePlan (NEWOBJ + BUILD: object.__new__, __dict__ update).
    "megatron.core.dist_checkpointing.strategies.torch.MCoreMetadata",
    "megatron.core.dist_checkpointing.strategies.torch.MCoreSavePlan",
    // DeepSpeed optimizer states: ZeroStageEnum is an IntEnum looked up by
    // value; the loss scalers and fragment_address are plain classes and a
    // dataclass rebuilt by NEWOBJ + BUILD (no __setstate__, no __reduce__).
    "deepspeed.runtime.zero.config.ZeroStageEnum", "deepspeed.runtime.fp16.loss_scaler.LossScaler",
    "deepspeed.runtime.fp16.loss_scaler.DynamicLossScaler",
    "deepspeed.utils.tensor_fragment.fragment_address",
    // DCP .metadata (torch.distributed.checkpoint, and its torch 1.13-2.1
    // home torch.distributed._shard.checkpoint): dataclasses rebuilt by
    // NEWOBJ + BUILD, Enums looked up by name or value; TensorProperties'
    // __setstate__ only maps _MEM_FORMAT_ENCODING back to a memory format.
    "torch.distributed.checkpoint.metadata.Metadata",
    "torch.distributed.checkpoint.metadata.TensorStorageMetadata",
    "torch.distributed.checkpoint.metadata.BytesStorageMetadata",
    "torch.distributed.checkpoint.metadata.ChunkStorageMetadata",
    "torch.distributed.checkpoint.metadata.TensorProperties",
    "torch.distributed.checkpoint.metadata.MetadataIndex",
    "torch.distributed.checkpoint.metadata.StorageMeta",
    "torch.distributed.checkpoint.metadata._MEM_FORMAT_ENCODING",
    "torch.distributed.checkpoint.filesystem._StorageInfo",
    "torch.distributed.checkpoint.planner.SavePlan", "torch.distributed.checkpoint.planner.WriteItem",
    "torch.distributed.checkpoint.planner.WriteItemType",
    "torch.distributed.checkpoint.planner.TensorWriteData",
    "torch.distributed._shard.checkpoint.metadata.Metadata",
    "torch.distributed._shard.checkpoint.metadata.TensorStorageMetadata",
    "torch.distributed._shard.checkpoint.metadata.BytesStorageMetadata",
    "torch.distributed._shard.checkpoint.metadata.ChunkStorageMetadata",
    "torch.distributed._shard.checkpoint.metadata.MetadataIndex",
    "torch.distributed._shard.checkpoint.filesystem._StorageInfo",
    "torch.distributed._shard.checkpoint.planner.SavePlan",
    "torch.distributed._shard.checkpoint.planner.WriteItem",
    "torch.distributed._shard.checkpoint.planner.WriteItemType",
    "torch.distributed._shard.checkpoint.planner.TensorWriteData",
    "torch.distributed._shard.sharded_tensor.metadata.TensorProperties",
    "torch.distributed._shard.sharded_tensor.metadata.MEM_FORMAT_ENCODING",
    // DCP's StorageMeta.checkpoint_id: PurePath.__reduce__ is
    // (cls, parts), so REDUCE builds a path object; nothing touches the
    // file system (pathlib._local is Python 3.13's home of the class).
    "pathlib.PosixPath", "pathlib.PurePosixPath", "pathlib._local.PosixPath",
    "pathlib._local.PurePosixPath",
    // DTensor and its mesh and placements: torch/distributed/tensor/__init__.py
    // registers exactly these with torch.serialization.add_safe_globals, so
    // weights_only loads them once torch.distributed.tensor is imported.
    "torch.distributed.tensor.DTensor",
    "torch.distributed.device_mesh.DeviceMesh",
    "torch.distributed.tensor._dtensor_spec.DTensorSpec",
    "torch.distributed.tensor._dtensor_spec.TensorMeta",
    "torch.distributed.tensor.placement_types.Shard",
    "torch.distributed.tensor.placement_types.Replicate",
    "torch.distributed.tensor.placement_types.Partial",
    // numpy values (rng states in trainer checkpoints, numpy scalars in
    // optimizer and metric states): _reconstruct(ndarray, shape, dtype)
    // allocates an empty array of a subtype that must itself be a global
    // judged here, BUILD fills it from bytes (object arrays take already
    // unpickled items); dtype(code, align, copy) and the DType classes build
    // a dtype; scalar(dtype, bytes) builds a numpy scalar. numpy 2 moved
    // numpy.core to numpy._core. Megatron registers _reconstruct, ndarray,
    // dtype and UInt32DType with add_safe_globals.
    "numpy.ndarray", "numpy.dtype", "numpy.core.multiarray._reconstruct",
    "numpy.core.multiarray.scalar", "numpy._core.multiarray._reconstruct",
    "numpy._core.multiarray.scalar", "numpy.dtypes.BoolDType", "numpy.dtypes.Int8DType",
    "numpy.dtypes.UInt8DType", "numpy.dtypes.Int16DType", "numpy.dtypes.UInt16DType",
    "numpy.dtypes.Int32DType", "numpy.dtypes.UInt32DType", "numpy.dtypes.Int64DType",
    "numpy.dtypes.UInt64DType", "numpy.dtypes.Float16DType", "numpy.dtypes.Float32DType",
    "numpy.dtypes.Float64DType", "numpy.dtypes.Complex64DType", "numpy.dtypes.Complex128DType",
};

template <size_t N>
constexpr std::array<std::string_view, N> Sorted(const std::string_view (&list)[N]) {
  std::array<std::string_view, N> out{};
  std::copy(std::begin(list), std::end(list), out.begin());
  std::sort(out.begin(), out.end());
  return out;
}

constexpr auto kTorchSorted = Sorted(kTorchWeightsOnly);
constexpr auto kDataSorted = Sorted(kPlainData);

}  // namespace

bool IsAllowedGlobal(std::string_view dotted) {
  return std::binary_search(kTorchSorted.begin(), kTorchSorted.end(), dotted) ||
         std::binary_search(kDataSorted.begin(), kDataSorted.end(), dotted);
}

}  // namespace zerofold::pickle
