// Pickle opcodes, named and valued as in CPython's Lib/pickletools.py
// (`opcodes` table), which is the reference for each opcode's argument.
#ifndef ZEROFOLD_PICKLE_OPCODES_H_
#define ZEROFOLD_PICKLE_OPCODES_H_

#include <cstdint>
#include <string_view>

namespace zerofold::pickle {

enum class Op : uint8_t {
  // Protocol 0 (text arguments end with '\n').
  MARK = '(',
  STOP = '.',
  POP = '0',
  DUP = '2',
  FLOAT = 'F',
  INT = 'I',
  LONG = 'L',
  NONE = 'N',
  PERSID = 'P',
  REDUCE = 'R',
  STRING = 'S',
  UNICODE = 'V',
  APPEND = 'a',
  BUILD = 'b',
  GLOBAL = 'c',
  DICT = 'd',
  GET = 'g',
  INST = 'i',
  LIST = 'l',
  PUT = 'p',
  SETITEM = 's',
  TUPLE = 't',
  // Protocol 1.
  POP_MARK = '1',
  BINFLOAT = 'G',
  BININT = 'J',
  BININT1 = 'K',
  BININT2 = 'M',
  BINPERSID = 'Q',
  BINSTRING = 'T',
  SHORT_BINSTRING = 'U',
  BINUNICODE = 'X',
  EMPTY_LIST = ']',
  APPENDS = 'e',
  BINGET = 'h',
  LONG_BINGET = 'j',
  OBJ = 'o',
  BINPUT = 'q',
  LONG_BINPUT = 'r',
  SETITEMS = 'u',
  EMPTY_TUPLE = ')',
  EMPTY_DICT = '}',
  // Protocol 2.
  PROTO = 0x80,
  NEWOBJ = 0x81,
  EXT1 = 0x82,
  EXT2 = 0x83,
  EXT4 = 0x84,
  TUPLE1 = 0x85,
  TUPLE2 = 0x86,
  TUPLE3 = 0x87,
  NEWTRUE = 0x88,
  NEWFALSE = 0x89,
  LONG1 = 0x8a,
  LONG4 = 0x8b,
  // Protocol 3.
  BINBYTES = 'B',
  SHORT_BINBYTES = 'C',
  // Protocol 4.
  SHORT_BINUNICODE = 0x8c,
  BINUNICODE8 = 0x8d,
  BINBYTES8 = 0x8e,
  EMPTY_SET = 0x8f,
  ADDITEMS = 0x90,
  FROZENSET = 0x91,
  NEWOBJ_EX = 0x92,
  STACK_GLOBAL = 0x93,
  MEMOIZE = 0x94,
  FRAME = 0x95,
  // Protocol 5.
  BYTEARRAY8 = 0x96,
  NEXT_BUFFER = 0x97,
  READONLY_BUFFER = 0x98,
};

// The highest protocol this code knows (pickle.HIGHEST_PROTOCOL in 3.8+).
constexpr int kHighestProtocol = 5;

// Python's pickler writes APPENDS/SETITEMS in batches of this many items
// (BATCHSIZE in Modules/_pickle.c).
constexpr size_t kBatchSize = 1000;

// The pickletools name of an opcode byte ("BINUNICODE8"), or an empty view
// for a byte that is no opcode.
constexpr std::string_view OpName(uint8_t byte) {
  switch (static_cast<Op>(byte)) {
#define ZF_PICKLE_OP_NAME_(name) \
  case Op::name:                 \
    return #name;
    ZF_PICKLE_OP_NAME_(MARK) ZF_PICKLE_OP_NAME_(STOP) ZF_PICKLE_OP_NAME_(POP) ZF_PICKLE_OP_NAME_(DUP)
    ZF_PICKLE_OP_NAME_(FLOAT) ZF_PICKLE_OP_NAME_(INT) ZF_PICKLE_OP_NAME_(LONG) ZF_PICKLE_OP_NAME_(NONE)
    ZF_PICKLE_OP_NAME_(PERSID) ZF_PICKLE_OP_NAME_(REDUCE) ZF_PICKLE_OP_NAME_(STRING)
    ZF_PICKLE_OP_NAME_(UNICODE) ZF_PICKLE_OP_NAME_(APPEND) ZF_PICKLE_OP_NAME_(BUILD)
    ZF_PICKLE_OP_NAME_(GLOBAL) ZF_PICKLE_OP_NAME_(DICT) ZF_PICKLE_OP_NAME_(GET) ZF_PICKLE_OP_NAME_(INST)
    ZF_PICKLE_OP_NAME_(LIST) ZF_PICKLE_OP_NAME_(PUT) ZF_PICKLE_OP_NAME_(SETITEM) ZF_PICKLE_OP_NAME_(TUPLE)
    ZF_PICKLE_OP_NAME_(POP_MARK) ZF_PICKLE_OP_NAME_(BINFLOAT) ZF_PICKLE_OP_NAME_(BININT)
    ZF_PICKLE_OP_NAME_(BININT1) ZF_PICKLE_OP_NAME_(BININT2) ZF_PICKLE_OP_NAME_(BINPERSID)
    ZF_PICKLE_OP_NAME_(BINSTRING) ZF_PICKLE_OP_NAME_(SHORT_BINSTRING) ZF_PICKLE_OP_NAME_(BINUNICODE)
    ZF_PICKLE_OP_NAME_(EMPTY_LIST) ZF_PICKLE_OP_NAME_(APPENDS) ZF_PICKLE_OP_NAME_(BINGET)
    ZF_PICKLE_OP_NAME_(LONG_BINGET) ZF_PICKLE_OP_NAME_(OBJ) ZF_PICKLE_OP_NAME_(BINPUT)
    ZF_PICKLE_OP_NAME_(LONG_BINPUT) ZF_PICKLE_OP_NAME_(SETITEMS) ZF_PICKLE_OP_NAME_(EMPTY_TUPLE)
    ZF_PICKLE_OP_NAME_(EMPTY_DICT) ZF_PICKLE_OP_NAME_(PROTO) ZF_PICKLE_OP_NAME_(NEWOBJ)
    ZF_PICKLE_OP_NAME_(EXT1) ZF_PICKLE_OP_NAME_(EXT2) ZF_PICKLE_OP_NAME_(EXT4) ZF_PICKLE_OP_NAME_(TUPLE1)
    ZF_PICKLE_OP_NAME_(TUPLE2) ZF_PICKLE_OP_NAME_(TUPLE3) ZF_PICKLE_OP_NAME_(NEWTRUE)
    ZF_PICKLE_OP_NAME_(NEWFALSE) ZF_PICKLE_OP_NAME_(LONG1) ZF_PICKLE_OP_NAME_(LONG4)
    ZF_PICKLE_OP_NAME_(BINBYTES) ZF_PICKLE_OP_NAME_(SHORT_BINBYTES) ZF_PICKLE_OP_NAME_(SHORT_BINUNICODE)
    ZF_PICKLE_OP_NAME_(BINUNICODE8) ZF_PICKLE_OP_NAME_(BINBYTES8) ZF_PICKLE_OP_NAME_(EMPTY_SET)
    ZF_PICKLE_OP_NAME_(ADDITEMS) ZF_PICKLE_OP_NAME_(FROZENSET) ZF_PICKLE_OP_NAME_(NEWOBJ_EX)
    ZF_PICKLE_OP_NAME_(STACK_GLOBAL) ZF_PICKLE_OP_NAME_(MEMOIZE) ZF_PICKLE_OP_NAME_(FRAME)
    ZF_PICKLE_OP_NAME_(BYTEARRAY8) ZF_PICKLE_OP_NAME_(NEXT_BUFFER) ZF_PICKLE_OP_NAME_(READONLY_BUFFER)
#undef ZF_PICKLE_OP_NAME_
  }
  return {};
}

constexpr std::string_view OpName(Op op) { return OpName(static_cast<uint8_t>(op)); }

}  // namespace zerofold::pickle

#endif  // ZEROFOLD_PICKLE_OPCODES_H_
