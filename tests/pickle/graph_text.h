// Test helpers: a Graph printed in the text form of fixtures/pickle/render.py,
// fixture files, and a walker of opcode boundaries independent of the decoder.
#ifndef ZEROFOLD_TESTS_PICKLE_GRAPH_TEXT_H_
#define ZEROFOLD_TESTS_PICKLE_GRAPH_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "pickle/graph.h"

namespace zerofold::pickle::testing {

// The graph reachable from `root` in render.py's text form (with a final
// '\n'). Recursive: for test-sized graphs only.
std::string GraphText(const Graph& graph, NodeId root);

// Python's repr() of a float ("1.5", "1e-08", "1e+16", "nan", "-0.0").
std::string PythonFloatRepr(double v);

// Whole file contents; empty when the file cannot be read.
std::vector<std::byte> ReadFile(const std::string& path);
std::string ReadText(const std::string& path);

// Fixture files: the .pkl files under fixtures/pickle/<folder>, sorted, as
// paths without the extension.
std::vector<std::string> FixtureStems(std::string_view folder);

// Bytes from a string literal.
std::vector<std::byte> Bytes(std::string_view s);

// Start offsets of the opcodes of a well-formed pickle, computed from each
// opcode's argument format (pickletools), without the decoder.
std::vector<size_t> OpcodeStarts(const std::vector<std::byte>& pickle);

}  // namespace zerofold::pickle::testing

#endif  // ZEROFOLD_TESTS_PICKLE_GRAPH_TEXT_H_
