#include "dcp/listing.h"

#include <algorithm>
#include <map>

#include "dcp/plan.h"
#include "io/checked_math.h"

namespace zerofold::dcp {

namespace {

GroupTotal& Group(std::vector<GroupTotal>& groups, const std::string& name) {
  for (GroupTotal& g : groups)
    if (g.group == name) return g;
  groups.push_back(GroupTotal{name, 0, 0});
  return groups.back();
}

void AddOnce(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

}  // namespace

Listing ListMetadata(const DcpFolder& folder, const Metadata& md) {
  Listing l;
  l.path = folder.path;
  l.safetensors_form = !folder.hf_shards.empty();
  l.schema_2x = md.schema_2x;
  l.version = md.version;
  l.groups.push_back(GroupTotal{"model", 0, 0});
  const std::map<std::string, LeftOutWhy> training = TrainingStateGroups(md);
  std::map<std::string, std::vector<std::string>> files_of;  // key -> files
  for (const StorageItem& s : md.storage) {
    AddOnce(files_of[s.fqn], s.relative_path);
    AddOnce(l.files, s.relative_path);
  }
  for (const Entry& e : md.entries) {
    if (!e.is_tensor) {
      l.non_tensor.push_back(e.key);
      continue;
    }
    KeyListing k;
    k.key = e.key;
    k.dtype = torch::Info(e.dtype).name;
    k.shape = e.size;
    k.chunks = e.chunks.size();
    k.files = files_of[e.key];
    uint64_t n = torch::Info(e.dtype).itemsize;
    for (int64_t d : e.size) n = io::CheckedMul<uint64_t>(n, static_cast<uint64_t>(d)).value_or(UINT64_MAX);
    k.nbytes = n;
    GroupTotal& g = Group(l.groups, KeyGroup(training, e.key));
    ++g.tensors;
    g.nbytes = io::CheckedAdd(g.nbytes, n).value_or(UINT64_MAX);
    l.tensor_bytes = io::CheckedAdd(l.tensor_bytes, n).value_or(UINT64_MAX);
    l.tensors.push_back(std::move(k));
  }
  return l;
}

Result<std::optional<Listing>> ListDcpPath(Env* env, const std::string& path, const torch::ReadOptions& read) {
  std::optional<DcpFolder> folder = FindDcpFolder(env, path);
  if (!folder) return std::optional<Listing>();
  ZF_ASSIGN_OR_RETURN(Metadata md, LoadMetadata(env, *folder, read.max_pickle_bytes, read.pickle));
  return std::optional<Listing>(ListMetadata(*folder, md));
}

void WriteListingJson(json::Writer& w, const Listing& l) {
  w.BeginObject();
  w.Key("path");
  w.String(l.path);
  w.Key("format");
  w.String("dcp");
  WriteListingFields(w, l);
  w.EndObject();
}

void WriteListingFields(json::Writer& w, const Listing& l) {
  w.Key("layout");
  w.String(l.safetensors_form ? "safetensors" : l.schema_2x ? "torch 2.x" : "torch 1.13");
  w.Key("version");
  w.String(l.version);
  w.Key("tensors");
  w.BeginArray();
  for (const KeyListing& k : l.tensors) {
    w.BeginObject();
    w.Key("key");
    w.String(k.key);
    w.Key("dtype");
    w.String(k.dtype);
    w.Key("shape");
    w.BeginArray();
    for (int64_t d : k.shape) w.Int(d);
    w.EndArray();
    w.Key("chunks");
    w.Uint(k.chunks);
    w.Key("files");
    w.Strings(k.files);
    w.Key("nbytes");
    w.Uint(k.nbytes);
    w.EndObject();
  }
  w.EndArray();
  w.Key("non_tensor");
  w.BeginArray();
  for (const std::string& k : l.non_tensor) {
    w.BeginObject();
    w.Key("key");
    w.String(k);
    w.EndObject();
  }
  w.EndArray();
  w.Key("groups");
  w.BeginArray();
  for (const GroupTotal& g : l.groups) {
    w.BeginObject();
    w.Key("group");
    w.String(g.group);
    w.Key("tensors");
    w.Uint(g.tensors);
    w.Key("nbytes");
    w.Uint(g.nbytes);
    w.EndObject();
  }
  w.EndArray();
  w.Key("data_files");
  w.Strings(l.files);
  w.Key("tensor_bytes");
  w.Uint(l.tensor_bytes);
}

}  // namespace zerofold::dcp
