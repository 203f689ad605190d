#include "spirv_check.hpp"

#include <spirv-tools/libspirv.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <unordered_map>

namespace zp::kernels {
namespace {

constexpr spv_target_env kEnv = SPV_ENV_OPENCL_2_2;
// The largest module read: the package's are well under 1 MB.
constexpr std::streamsize kMaxSpirvBytes = std::streamsize(256) << 20;

// SPIR-V opcodes (unified1 spirv.h; the headers package is not a dependency).
enum : std::uint16_t {
    OpFunction = 54,
    OpFunctionParameter = 55,
    OpFunctionEnd = 56,
    OpVariable = 59,
    OpLabel = 248,
    OpBranch = 249,
    OpBranchConditional = 250,
    OpSwitch = 251,
    OpKill = 252,
    OpReturn = 253,
    OpReturnValue = 254,
    OpUnreachable = 255,
};

bool isTerminator(std::uint16_t op) {
    return op == OpBranch || op == OpBranchConditional || op == OpSwitch || op == OpKill || op == OpReturn ||
           op == OpReturnValue || op == OpUnreachable;
}

struct Instruction {
    std::size_t begin = 0;  // word offset in the module
    std::uint16_t words = 0;
    std::uint16_t opcode = 0;
    std::uint32_t resultId = 0;
    std::vector<std::uint32_t> labelOperands;  // branch targets (terminators only)
};

struct Parsed {
    std::vector<Instruction> instructions;
};

spv_result_t onInstruction(void* user, const spv_parsed_instruction_t* in) {
    auto& parsed = *static_cast<Parsed*>(user);
    Instruction ins;
    ins.words = in->num_words;
    ins.opcode = in->opcode;
    ins.resultId = in->result_id;
    // OpBranch: target; OpBranchConditional: condition, true, false[, weights]; OpSwitch:
    // selector, default, (literal, target)*. The parser tells ids from literals for us.
    auto idAt = [&](std::uint16_t operand) { return in->words[in->operands[operand].offset]; };
    if (in->opcode == OpBranch) {
        ins.labelOperands.push_back(idAt(0));
    } else if (in->opcode == OpBranchConditional) {
        ins.labelOperands = {idAt(1), idAt(2)};
    } else if (in->opcode == OpSwitch) {
        for (std::uint16_t o = 1; o < in->num_operands; ++o)
            if (in->operands[o].type == SPV_OPERAND_TYPE_ID) ins.labelOperands.push_back(idAt(o));
    }
    if (!parsed.instructions.empty()) {
        const auto& prev = parsed.instructions.back();
        ins.begin = prev.begin + prev.words;
    } else {
        ins.begin = 5;  // after the header
    }
    parsed.instructions.push_back(std::move(ins));
    return SPV_SUCCESS;
}

Parsed parse(std::span<const std::uint32_t> words) {
    Parsed parsed;
    spvtools::Context context(kEnv);
    spv_diagnostic diagnostic = nullptr;
    const spv_result_t rc =
        spvBinaryParse(context.CContext(), &parsed, words.data(), words.size(), nullptr, onInstruction, &diagnostic);
    if (rc != SPV_SUCCESS) {
        std::string msg = diagnostic && diagnostic->error ? diagnostic->error : "unknown parse error";
        spvDiagnosticDestroy(diagnostic);
        throw std::runtime_error("SPIR-V parse failed: " + msg);
    }
    spvDiagnosticDestroy(diagnostic);
    return parsed;
}

// A function without a body is an import; the package's modules are built and loaded one
// by one, so nothing could ever resolve it. (C99 `inline` helpers that the compiler chose
// not to inline end up like this; SPIRV-Tools accepts them under the Linkage capability.)
std::optional<std::string> undefinedFunctions(std::span<const std::uint32_t> words) {
    Parsed parsed;
    try {
        parsed = parse(words);
    } catch (const std::exception& e) {
        return std::string(e.what()) + "\n";
    }
    std::string log;
    const auto& all = parsed.instructions;
    for (std::size_t i = 0; i < all.size(); ++i) {
        if (all[i].opcode != OpFunction) continue;
        std::size_t j = i + 1;
        while (j < all.size() && all[j].opcode == OpFunctionParameter) ++j;
        if (j < all.size() && all[j].opcode == OpFunctionEnd)
            log += "function %" + std::to_string(all[i].resultId) +
                   " is declared but never defined (a non-static inline helper?)\n";
    }
    if (log.empty()) return std::nullopt;
    return log;
}

}  // namespace

std::optional<std::string> validateSpirv(std::span<const std::uint32_t> words) {
    if (auto err = undefinedFunctions(words)) return err;
    spvtools::SpirvTools tools(kEnv);
    std::string log;
    tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& pos, const char* msg) {
        log += "word " + std::to_string(pos.index) + ": " + msg + "\n";
    });
    if (tools.Validate(words.data(), words.size())) return std::nullopt;
    if (log.empty()) log = "rejected by the SPIR-V validator (no message)\n";
    return log;
}

std::vector<std::uint32_t> orderSpirvBlocks(std::span<const std::uint32_t> words) {
    const Parsed parsed = parse(words);

    std::vector<std::uint32_t> out(words.begin(), words.begin() + 5);
    auto emit = [&](const Instruction& ins) {
        out.insert(out.end(), words.begin() + ins.begin, words.begin() + ins.begin + ins.words);
    };
    const auto& all = parsed.instructions;
    std::size_t i = 0;
    while (i < all.size()) {
        if (all[i].opcode != OpFunction) {
            emit(all[i++]);
            continue;
        }
        // Function header: OpFunction and its parameters, up to the first block.
        while (i < all.size() && all[i].opcode != OpLabel && all[i].opcode != OpFunctionEnd) emit(all[i++]);
        struct Block {
            std::size_t first, last;  // instruction indices, inclusive
            std::vector<std::uint32_t> successors;
        };
        std::vector<Block> blocks;
        std::unordered_map<std::uint32_t, std::size_t> blockOfLabel;
        while (i < all.size() && all[i].opcode == OpLabel) {
            Block b{i, i, {}};
            blockOfLabel[all[i].resultId] = blocks.size();
            while (i < all.size() && !isTerminator(all[i].opcode)) ++i;
            if (i == all.size()) throw std::runtime_error("SPIR-V block without a terminator");
            b.last = i;
            b.successors = all[i].labelOperands;
            blocks.push_back(std::move(b));
            ++i;
        }
        // Iterative DFS post-order from the entry block, successors in their listed order.
        std::vector<std::size_t> post;
        std::vector<char> seen(blocks.size(), 0);
        if (!blocks.empty()) {
            std::vector<std::pair<std::size_t, std::size_t>> stack{{0, 0}};
            seen[0] = 1;
            while (!stack.empty()) {
                auto& [b, next] = stack.back();
                if (next < blocks[b].successors.size()) {
                    const auto it = blockOfLabel.find(blocks[b].successors[next++]);
                    if (it == blockOfLabel.end())
                        throw std::runtime_error("SPIR-V branch to a label outside its function");
                    if (!seen[it->second]) {
                        seen[it->second] = 1;
                        stack.emplace_back(it->second, 0);
                    }
                } else {
                    post.push_back(b);
                    stack.pop_back();
                }
            }
        }
        std::vector<std::size_t> order(post.rbegin(), post.rend());
        for (std::size_t b = 0; b < blocks.size(); ++b)
            if (!seen[b]) order.push_back(b);
        for (std::size_t b : order) {
            const Block& blk = blocks[b];
            if (b != 0) {
                for (std::size_t k = blk.first; k <= blk.last; ++k) emit(all[k]);
                continue;
            }
            // The entry block: its label, its variables, then the rest in their order.
            emit(all[blk.first]);
            for (std::size_t k = blk.first + 1; k <= blk.last; ++k)
                if (all[k].opcode == OpVariable) emit(all[k]);
            for (std::size_t k = blk.first + 1; k <= blk.last; ++k)
                if (all[k].opcode != OpVariable) emit(all[k]);
        }
        if (i < all.size() && all[i].opcode == OpFunctionEnd) emit(all[i++]);
    }
    return out;
}

std::vector<std::uint32_t> readSpirvWords(const std::string& path) {
    // Checked before opening: opening a FIFO without a writer blocks, and a directory or a
    // device (/dev/zero) has no size to read.
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(st))
        throw std::runtime_error(path + ": cannot open: " + (ec ? ec.message() : std::string("no such file")));
    if (!std::filesystem::is_regular_file(st))
        throw std::runtime_error(path + ": " +
                                 (std::filesystem::is_directory(st) ? "a directory"
                                  : std::filesystem::is_fifo(st)    ? "a FIFO"
                                                                    : "not a regular file") +
                                 ", not a SPIR-V module");
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f) throw std::runtime_error(path + ": cannot open");
    const std::streamsize bytes = f.tellg();
    if (bytes <= 0 || bytes % 4)
        throw std::runtime_error(path + ": " + std::to_string(bytes) +
                                 " bytes is not a SPIR-V module (whole 32-bit words)");
    if (bytes > kMaxSpirvBytes)
        throw std::runtime_error(path + ": " + std::to_string(bytes) + " bytes is more than a kernel module's " +
                                 std::to_string(kMaxSpirvBytes) + " at most");
    std::vector<std::uint32_t> words(static_cast<std::size_t>(bytes) / 4);
    f.seekg(0);
    f.read(reinterpret_cast<char*>(words.data()), bytes);
    if (!f) throw std::runtime_error(path + ": cannot read");
    return words;
}

}  // namespace zp::kernels
