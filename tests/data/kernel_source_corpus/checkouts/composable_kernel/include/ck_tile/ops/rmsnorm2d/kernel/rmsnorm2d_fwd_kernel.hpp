// Extract of ROCm/composable_kernel @ ea4206f11e02, include/ck_tile/ops/rmsnorm2d/kernel/rmsnorm2d_fwd_kernel.hpp:
// the template head and opening of the kernel struct, verbatim; its members are left out.
#pragma once

namespace ck_tile {

// TODO: Extract some type to wrapper class
template <typename Pipeline_, typename Epilogue_>
struct Rmsnorm2dFwd
{
    using Pipeline = remove_cvref_t<Pipeline_>;
    using Epilogue = remove_cvref_t<Epilogue_>;
    using Problem  = typename Pipeline::Problem;
    // (members left out of this extract)
};

} // namespace ck_tile
