// Constants of the torch file formats, named once, after torch's sources.
#ifndef ZEROFOLD_TORCH_FORMAT_H_
#define ZEROFOLD_TORCH_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace zerofold::torch {

// --- Zip archives (torch >= 1.6; caffe2/serialize/inline_container.cc) ---
// torch.load takes a file for a zip archive when it starts with a local
// file header (torch/serialization.py _is_zipfile).
constexpr std::string_view kZipLocalHeaderMagic = "PK\x03\x04";  // APPNOTE 4.3.7
// The first 8 bytes of the preview release's archives, which torch refuses
// ("File is an unsupported archive format from the preview release").
constexpr std::string_view kPreviewMagic = "PYTORCH1";
// Records relative to the archive's top folder (torch/serialization.py _save).
constexpr std::string_view kDataPickleRecord = "data.pkl";
constexpr std::string_view kDataFolder = "data/";           // data/<key>: storage bytes
constexpr std::string_view kByteOrderRecord = "byteorder";  // "little" or "big"
constexpr std::string_view kByteOrderBig = "big";
constexpr std::string_view kByteOrderLittle = "little";
// TorchScript archives (torch/serialization.py _is_torchscript_zip; torch.jit.save).
constexpr std::string_view kTorchScriptConstantsRecord = "constants.pkl";
constexpr std::string_view kTorchScriptCodeFolder = "code/";

// --- Legacy format (torch < 1.6, or _use_new_zipfile_serialization=False;
// torch/serialization.py _legacy_save / _legacy_load) ---
// MAGIC_NUMBER = 0x1950a86a20f9469cfc6c, as the little-endian two's
// complement bytes a pickle LONG1 carries.
// The byteorder record holds one word ("little" or "big"); anything longer
// is not one.
constexpr uint64_t kMaxByteOrderBytes = 16;

constexpr std::string_view kLegacyMagicNumberLE = "\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";
constexpr int64_t kLegacyProtocolVersion = 1001;  // PROTOCOL_VERSION
// Each storage's bytes follow an element count (int64, little-endian
// whatever the writer's byte order: torch/csrc/serialization.cpp).
constexpr uint64_t kLegacyCountSize = 8;
// The oldest torch wrote a tar archive with members "storages", "tensors"
// and "pickle"; tar's "ustar" magic sits at this offset (POSIX.1 ustar header).
constexpr uint64_t kTarMagicOffset = 257;
constexpr std::string_view kTarMagic = "ustar";

// --- Pickle globals (torch/_utils.py, torch/_tensor.py) ---
constexpr std::string_view kTorchModule = "torch";
constexpr std::string_view kUtilsModule = "torch._utils";
constexpr std::string_view kTensorModule = "torch._tensor";
constexpr std::string_view kTensorModuleOld = "torch.tensor";  // renamed in torch 1.8; load maps it
constexpr std::string_view kRebuildTensor = "_rebuild_tensor";
constexpr std::string_view kRebuildTensorV2 = "_rebuild_tensor_v2";
constexpr std::string_view kRebuildTensorV3 = "_rebuild_tensor_v3";
constexpr std::string_view kRebuildQTensor = "_rebuild_qtensor";
constexpr std::string_view kRebuildParameter = "_rebuild_parameter";
constexpr std::string_view kRebuildParameterWithState = "_rebuild_parameter_with_state";
constexpr std::string_view kRebuildFromTypeV2 = "_rebuild_from_type_v2";
constexpr std::string_view kSizeClass = "Size";  // torch.Size
constexpr std::string_view kCollectionsModule = "collections";
constexpr std::string_view kOrderedDictClass = "OrderedDict";
// Rebuild call arguments (torch/_utils.py, torch/_tensor.py):
//   _rebuild_tensor(storage, storage_offset, size, stride)
//   _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
//   _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype[, metadata])
//   _rebuild_qtensor(storage, storage_offset, size, stride, quantizer_params, requires_grad, backward_hooks)
//   _rebuild_parameter(data, requires_grad, backward_hooks)
//   _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state)
//   _rebuild_from_type_v2(func, new_type, args, state)
constexpr size_t kArgStorage = 0;
constexpr size_t kArgStorageOffset = 1;
constexpr size_t kArgSize = 2;
constexpr size_t kArgStride = 3;
constexpr size_t kArgRequiresGrad = 4;     // v2, v3
constexpr size_t kArgV3DType = 6;
constexpr size_t kArgQuantizerParams = 4;  // qtensor
constexpr size_t kArgQRequiresGrad = 5;    // qtensor
constexpr size_t kRebuildTensorArgs = 4;
constexpr size_t kRebuildTensorV2Args = 6;  // + 1 with metadata
constexpr size_t kRebuildTensorV3Args = 7;  // + 1 with metadata
constexpr size_t kRebuildQTensorArgs = 7;
constexpr size_t kArgParamData = 0;
constexpr size_t kArgParamRequiresGrad = 1;
constexpr size_t kArgParamState = 3;
constexpr size_t kRebuildParameterArgs = 3;
constexpr size_t kRebuildParameterWithStateArgs = 4;
constexpr size_t kArgFromTypeFunc = 0;
constexpr size_t kArgFromTypeArgs = 2;
constexpr size_t kArgFromTypeState = 3;
constexpr size_t kRebuildFromTypeV2Args = 4;
// Persistent ids: ('storage', class, key, location, numel[, view_metadata]).
constexpr std::string_view kStoragePidTag = "storage";
constexpr std::string_view kModulePidTag = "module";  // legacy: ('module', class, file, source)
constexpr size_t kPidTag = 0;
constexpr size_t kPidClass = 1;
constexpr size_t kPidKey = 2;
constexpr size_t kPidLocation = 3;
constexpr size_t kPidNumel = 4;
constexpr size_t kPidViewMetadata = 5;  // legacy only
constexpr size_t kZipStoragePidItems = 5;
constexpr size_t kLegacyStoragePidItems = 6;

}  // namespace zerofold::torch

#endif  // ZEROFOLD_TORCH_FORMAT_H_
