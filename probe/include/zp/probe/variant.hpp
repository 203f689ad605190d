// The chain variants of DESIGN.md ("Chain variants"): names and what each materialises.
#pragma once

#include <array>
#include <string_view>

namespace zp::probe {

enum class Variant {
    Baseline,
    Gemm2LoaderFused,
    SourceDirect,
    PairedEpilogue,
    PairedDirect,
    M1Oracle,
    TwoLaunch,
    OneLaunch
};

inline constexpr std::array kAllVariants = {Variant::Baseline,       Variant::Gemm2LoaderFused, Variant::SourceDirect,
                                            Variant::PairedEpilogue, Variant::PairedDirect,     Variant::M1Oracle,
                                            Variant::TwoLaunch,      Variant::OneLaunch};

std::string_view variantName(Variant);
// Throws InputError naming the value and the valid names.
Variant parseVariant(std::string_view name);

// Which intermediate tensors a variant writes to device memory in compact-row order (§5:
// a case compares gate_up, act and y only where they are materialised; out always exists.
// m1_oracle keeps its tensors per route, not per compact row; two_launch and one_launch keep y
// in local memory only).
struct Materialised {
    bool gateUp = true;
    bool act = true;
    bool y = true;
};
Materialised materialised(Variant);

// Variants launched cooperatively (one persistent kernel whose groups wait for each other): valid
// only where the driver answers zeKernelSuggestMaxCooperativeGroupCount.
bool cooperative(Variant);

}  // namespace zp::probe
