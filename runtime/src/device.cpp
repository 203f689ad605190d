#include "zp/runtime/ze.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

namespace zp::runtime {
namespace {

constexpr uint32_t kIntelVendorId = 0x8086;

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// zecl names itself in its driver UUID ("zecl" in the first 4 bytes) and in the native kernel
// UUID its devices accept ("zecl-src-bundle1": the source bundle format).
// Intel's NEO exposes only GPUs with PCI vendor 0x8086. PoCL's CPU device also reports 0x8086,
// so the vendor id alone cannot tell the two apart.
DriverKind classify(const DeviceInfo& d) {
    std::string uuidText(reinterpret_cast<const char*>(d.driverProps.uuid.id), 4);
    if (lower(uuidText) == "zecl") return DriverKind::Zecl;
    std::string nativeText(reinterpret_cast<const char*>(d.module.nativeKernelSupported.id), 4);
    if (nativeText == "zecl") return DriverKind::Zecl;
    for (const auto& ext : d.extensions)
        if (lower(ext.name).find("zecl") != std::string::npos) return DriverKind::Zecl;
    if (d.props.vendorId == kIntelVendorId && d.props.type == ZE_DEVICE_TYPE_GPU) return DriverKind::Intel;
    return DriverKind::Other;
}

std::vector<ze_driver_extension_properties_t> driverExtensions(ze_driver_handle_t driver) {
    uint32_t count = 0;
    ZE_CHECK(zeDriverGetExtensionProperties(driver, &count, nullptr));
    std::vector<ze_driver_extension_properties_t> exts(count);
    if (count) ZE_CHECK(zeDriverGetExtensionProperties(driver, &count, exts.data()));
    exts.resize(count);
    return exts;
}

DeviceInfo queryDevice(ze_driver_handle_t driver, ze_device_handle_t device, const ze_driver_properties_t& driverProps,
                       ze_api_version_t api, const std::vector<ze_driver_extension_properties_t>& exts) {
    DeviceInfo d;
    d.driver = driver;
    d.device = device;
    d.driverProps = driverProps;
    d.apiVersion = api;
    d.extensions = exts;

    // _1_2 reports timerResolution in cycles/s (exact for non-integer ns periods, e.g. 19.2 MHz);
    // drivers older than 1.2 only know the ns/tick form.
    d.props.stype = ZE_MAJOR_VERSION(api) > 1 || ZE_MINOR_VERSION(api) >= 2 ? ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2
                                                                            : ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
    ZE_CHECK(zeDeviceGetProperties(device, &d.props));

    d.compute.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
    ZE_CHECK(zeDeviceGetComputeProperties(device, &d.compute));

    d.module.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
    ZE_CHECK(zeDeviceGetModuleProperties(device, &d.module));

    uint32_t count = 0;
    ZE_CHECK(zeDeviceGetMemoryProperties(device, &count, nullptr));
    d.memory.resize(count);
    for (auto& m : d.memory) m.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
    if (count) ZE_CHECK(zeDeviceGetMemoryProperties(device, &count, d.memory.data()));
    d.memory.resize(count);

    d.memoryAccess.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_ACCESS_PROPERTIES;
    ZE_CHECK(zeDeviceGetMemoryAccessProperties(device, &d.memoryAccess));

    count = 0;
    ZE_CHECK(zeDeviceGetCommandQueueGroupProperties(device, &count, nullptr));
    d.queueGroups.resize(count);
    for (auto& g : d.queueGroups) g.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
    if (count) ZE_CHECK(zeDeviceGetCommandQueueGroupProperties(device, &count, d.queueGroups.data()));
    d.queueGroups.resize(count);

#if defined(ZE_DEVICE_IP_VERSION_EXT_NAME)
    // Headers newer than Debian's 1.4 (ZP_ZE_HEADER_VERSION): the native-binary IP version, asked
    // only when the driver lists ZE_extension_device_ip_version.
    if (d.hasExtension(ZE_DEVICE_IP_VERSION_EXT_NAME)) {
        ze_device_ip_version_ext_t ip{ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT, nullptr, 0};
        ze_device_properties_t props{};
        props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
        props.pNext = &ip;
        if (zeDeviceGetProperties(device, &props) == ZE_RESULT_SUCCESS) d.ipVersion = ip.ipVersion;
    }
#endif

    d.kind = classify(d);
    return d;
}

std::string formatBytes(uint64_t bytes) {
    char buf[32];
    if (bytes >= (1ull << 30))
        std::snprintf(buf, sizeof buf, "%.1f GiB", double(bytes) / double(1ull << 30));
    else
        std::snprintf(buf, sizeof buf, "%.0f MiB", double(bytes) / double(1ull << 20));
    return buf;
}

const char* deviceTypeName(ze_device_type_t type) {
    switch (type) {
        case ZE_DEVICE_TYPE_GPU: return "gpu";
        case ZE_DEVICE_TYPE_CPU: return "cpu";
        case ZE_DEVICE_TYPE_FPGA: return "fpga";
        case ZE_DEVICE_TYPE_MCA: return "mca";
        case ZE_DEVICE_TYPE_VPU: return "vpu";
        default: return "unknown";
    }
}

std::string versionText(uint32_t v) {
    return std::to_string(ZE_MAJOR_VERSION(v)) + "." + std::to_string(ZE_MINOR_VERSION(v));
}

std::string moduleFormats(const DeviceInfo& d) {
    std::vector<std::string> formats;
    if (d.isIntel()) {
        std::string native = "native Intel binary";
        if (d.ipVersion) {
            char buf[32];
            std::snprintf(buf, sizeof buf, " (ip 0x%08x)", *d.ipVersion);
            native += buf;
        }
        formats.push_back(native);
    }
    if (d.isZecl()) formats.emplace_back("zecl source bundle");
    if (d.supportsSpirv()) formats.push_back("SPIR-V " + versionText(d.module.spirvVersionSupported));
    if (formats.empty()) formats.emplace_back("native (unknown driver)");
    std::string out;
    for (size_t i = 0; i < formats.size(); ++i) out += (i ? ", " : "") + formats[i];
    return out;
}

}  // namespace

const char* driverKindName(DriverKind kind) noexcept {
    switch (kind) {
        case DriverKind::Intel: return "intel";
        case DriverKind::Zecl: return "zecl";
        default: return "other";
    }
}

TimestampClock TimestampClock::fromProperties(const ze_device_properties_t& props, uint32_t validBits) {
    TimestampClock c;
    c.mask = validBitsMask(validBits);
    if (props.stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2)
        c.nsPerTick = props.timerResolution ? 1e9 / double(props.timerResolution) : 1.0;
    else
        c.nsPerTick = props.timerResolution ? double(props.timerResolution) : 1.0;
    return c;
}

double timestampToNs(const DeviceInfo& device, uint64_t ticks) { return device.kernelClock().toNs(ticks); }

uint32_t DeviceInfo::computeUnits() const noexcept {
    return props.numSlices * props.numSubslicesPerSlice * props.numEUsPerSubslice;
}

uint64_t DeviceInfo::totalMemory() const noexcept {
    uint64_t total = 0;
    for (const auto& m : memory) total += m.totalSize;
    return total;
}

bool DeviceInfo::hasExtension(std::string_view name) const noexcept {
    return std::any_of(extensions.begin(), extensions.end(),
                       [&](const ze_driver_extension_properties_t& e) { return name == e.name; });
}

uint32_t DeviceInfo::computeQueueOrdinal() const {
    for (uint32_t i = 0; i < queueGroups.size(); ++i)
        if (queueGroups[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) return i;
    detail::throwError(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, "DeviceInfo::computeQueueOrdinal", __FILE__, __LINE__,
                       "device '" + name() + "' has no compute queue group");
}

std::vector<DeviceInfo> listDevices() {
    init();
    uint32_t driverCount = 0;
    ZE_CHECK(zeDriverGet(&driverCount, nullptr));
    std::vector<ze_driver_handle_t> drivers(driverCount);
    if (driverCount) ZE_CHECK(zeDriverGet(&driverCount, drivers.data()));
    drivers.resize(driverCount);

    std::vector<DeviceInfo> out;
    for (ze_driver_handle_t driver : drivers) {
        ze_driver_properties_t driverProps{};
        driverProps.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES;
        ZE_CHECK(zeDriverGetProperties(driver, &driverProps));
        ze_api_version_t api{};
        ZE_CHECK(zeDriverGetApiVersion(driver, &api));
        auto exts = driverExtensions(driver);

        uint32_t deviceCount = 0;
        ZE_CHECK(zeDeviceGet(driver, &deviceCount, nullptr));
        std::vector<ze_device_handle_t> devices(deviceCount);
        if (deviceCount) ZE_CHECK(zeDeviceGet(driver, &deviceCount, devices.data()));
        devices.resize(deviceCount);
        for (ze_device_handle_t device : devices) {
            out.push_back(queryDevice(driver, device, driverProps, api, exts));
            out.back().index = out.size() - 1;
        }
    }
    return out;
}

DeviceInfo selectDevice(const std::string& spec) {
    std::vector<DeviceInfo> devices = listDevices();
    auto first = [&](auto pred) -> std::optional<DeviceInfo> {
        auto it = std::find_if(devices.begin(), devices.end(), pred);
        if (it == devices.end()) return std::nullopt;
        return *it;
    };
    auto fail = [&](const std::string& why) {
        std::string choices = "valid choices: \"\" (first Intel GPU, else first zecl device), \"intel\", \"zecl\"";
        if (!devices.empty()) choices += ", 0.." + std::to_string(devices.size() - 1);
        choices += "\n" + formatDeviceList(devices);
        detail::throwError(ZE_RESULT_ERROR_INVALID_ARGUMENT, "zp::runtime::selectDevice", __FILE__, __LINE__,
                           "device '" + spec + "': " + why + "; " + choices);
    };

    if (devices.empty()) fail("no Level Zero device found");
    if (spec.empty()) {
        if (auto d = first([](const DeviceInfo& d) { return d.isIntel() && d.isGpu(); })) return *d;
        if (auto d = first([](const DeviceInfo& d) { return d.isZecl(); })) return *d;
        return devices.front();
    }
    const std::string s = lower(spec);
    if (s == "intel" || s == "zecl") {
        const DriverKind want = s == "intel" ? DriverKind::Intel : DriverKind::Zecl;
        if (auto d = first([&](const DeviceInfo& d) { return d.kind == want; })) return *d;
        fail("no " + s + " device present");
    }
    if (std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }) && s.size() < 10) {
        size_t index = std::stoul(s);
        if (index < devices.size()) return devices[index];
        fail("index out of range");
    }
    fail("not a device selector");
    __builtin_unreachable();
}

std::string formatDeviceList(const std::vector<DeviceInfo>& devices) {
    std::string out;
    ze_driver_handle_t lastDriver = nullptr;
    size_t driverIndex = 0;
    char line[512];
    for (const DeviceInfo& d : devices) {
        if (d.driver != lastDriver) {
            std::snprintf(line, sizeof line, "driver %zu: %s  API %s  version 0x%08x\n", driverIndex++,
                          driverKindName(d.kind), versionText(d.apiVersion).c_str(), d.driverProps.driverVersion);
            out += line;
            lastDriver = d.driver;
        }
        std::snprintf(line, sizeof line, "  [%zu] %s  %s  %u CUs  %s  max group %u  fp32 denorm: %s  formats: %s\n",
                      d.index, d.props.name, deviceTypeName(d.props.type), d.computeUnits(),
                      formatBytes(d.totalMemory()).c_str(), d.compute.maxTotalGroupSize,
                      d.supportsFp32Denorm() ? "yes" : "no", moduleFormats(d).c_str());
        out += line;
    }
    if (devices.empty()) out = "no Level Zero devices\n";
    return out;
}

std::string formatDeviceList() { return formatDeviceList(listDevices()); }

GlobalTimestamps globalTimestamps(const DeviceInfo& device) {
    if (!device.device)
        detail::throwError(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, "zp::runtime::globalTimestamps", __FILE__, __LINE__,
                           "DeviceInfo has no device handle; obtain it from listDevices()/selectDevice()");
    GlobalTimestamps t;
    ZE_CHECK(zeDeviceGetGlobalTimestamps(device.device, &t.host, &t.device));
    return t;
}

}  // namespace zp::runtime
