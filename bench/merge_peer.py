#!/usr/bin/python3
"""The peer approach to merging a DeepSpeed ZeRO-3 checkpoint, for bench/merge_bench.py.

What DeepSpeed 0.14.5's zero_to_fp32.py does for stage 3 (_get_fp32_state_dict_from_zero3_checkpoint),
without DeepSpeed installed: tests/torch_oracle.py's stub modules stand in for DeepSpeed's classes,
then torch.load of every rank file (whole files, Adam moments included; the moments are dropped
right after each load, as zero_to_fp32.py does), torch.cat of each rank's fp32 sub-groups,
per param the concatenation of its pieces across ranks cut to numel, frozen params from the
fragments, buffers from rank 0's module (cast to float, as zero_to_fp32.py does), ties copied
by reference, then torch.save.

usage: merge_peer.py CKPT_DIR OUT_FILE
"""

import collections
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
import torch  # noqa: E402
import torch_oracle as oracle  # noqa: E402


def rank_files(folder, suffix):
    pattern = re.compile(r"^zero_pp_rank_(\d+)_mp_rank_00_" + suffix + r"\.pt$")
    found = sorted((int(m.group(1)), name) for name in os.listdir(folder) if (m := pattern.match(name)))
    return [os.path.join(folder, name) for _, name in found]


def main(ckpt, out):
    with open(os.path.join(ckpt, "latest")) as f:
        folder = os.path.join(ckpt, f.read().strip())
    fp32_flat_groups = []
    for path in rank_files(folder, "optim_states"):
        sd = oracle.load(path)
        osd = sd["optimizer_state_dict"]
        osd.pop("optimizer_state_dict", None)  # zero_to_fp32.py drops the Adam moments at once
        fp32_flat_groups.append(torch.cat(osd["fp32_flat_groups"], 0))
        del sd, osd
    models = [oracle.load(path) for path in rank_files(folder, "model_states")]
    ws = len(fp32_flat_groups)
    first = models[0]
    state_dict = collections.OrderedDict()
    for name in first["buffer_names"]:
        state_dict[name] = first["module"][name].float()
    for name, shape in (first["frozen_param_shapes"] or {}).items():
        numel = shape.numel()
        pieces = tuple(m["frozen_param_fragments"][name] for m in models)
        state_dict[name] = torch.cat(pieces, 0).narrow(0, 0, numel).view(shape)
    offset = 0
    for group in first["param_shapes"]:
        for name, shape in group.items():
            numel = shape.numel()
            piece = math.ceil(numel / ws)
            state_dict[name] = torch.cat(tuple(fp32_flat_groups[r].narrow(0, offset, piece) for r in range(ws)),
                                         0).narrow(0, 0, numel).view(shape)
            offset += piece
    for name, owner in first.get("shared_params", {}).items():
        state_dict[name] = state_dict[owner]
    torch.save(state_dict, out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
