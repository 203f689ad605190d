#include "zp/scheduler/device_setup.hpp"

namespace zp::scheduler {

runtime::DeviceInfo selectDevice(const std::string& spec) {
    try {
        return runtime::selectDevice(spec);
    } catch (const runtime::Error& e) {
        if (e.code() != ZE_RESULT_ERROR_INVALID_ARGUMENT) throw;
        throw NoSuchDevice(spec, e);
    }
}

std::unique_ptr<DeviceSetup> DeviceSetup::open(const DeviceRequest& request) {
    runtime::init(request.init);
    const runtime::DeviceInfo device = selectDevice(request.device);
    try {
        return std::make_unique<DeviceSetup>(device, request.tuning);
    } catch (const UnsupportedDevice& e) {
        // Only a tuning asked for is the caller's to change; a device that cannot run the package is not.
        if (!request.tuning || request.tuning->isPackaged()) throw;
        throw TuningNotBuildable(e.what());
    }
}

DeviceSetup::DeviceSetup(const runtime::DeviceInfo& device, const std::optional<KernelTuning>& tuning)
    : device_(device), context_(device_) {
    modules(tuning.value_or(KernelTuning::recommendedFor(device_)));
}

KernelModules& DeviceSetup::modules(const KernelTuning& tuning) {
    for (auto& [t, m] : modules_)
        if (t == tuning) return *m;
    modules_.emplace_back(tuning,
                          std::make_unique<KernelModules>(context_, device_, kernels::Package::instance(), tuning));
    return *modules_.back().second;
}

std::string DeviceSetup::kernelsText() const {
    const KernelTuning& t = modules().tuning();
    return modules().choice().why + (t.isPackaged() ? std::string() : "; tiles " + t.describe());
}

DeviceLayer::DeviceLayer(DeviceSetup& setup, const oracle::ChainShape& shape)
    : setup_(&setup),
      weights_(setup.context(), setup.device(), shape),
      silu_(oracle::buildSiluTable(shape.swigluAlpha)) {}

std::unique_ptr<DeviceChain> DeviceLayer::makeChain(probe::Variant variant, IdWidth ids) {
    return makeChain(variant, setup_->modules(), ids);
}

std::unique_ptr<DeviceChain> DeviceLayer::makeChain(probe::Variant variant, KernelModules& modules, IdWidth ids) {
    return std::make_unique<DeviceChain>(setup_->context(), setup_->device(), modules, weights_.shape(), variant,
                                         weights_, silu_, ids);
}

}  // namespace zp::scheduler
