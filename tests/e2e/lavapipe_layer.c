// A Vulkan layer for tests/e2e/test_browser_f16.py only: it shows Mesa's lavapipe (a software Vulkan that
// offers shaderFloat16) to Chromium with SwiftShader's vendor and device ids (0x1AE0, 0xC0DE). Chromium's
// WebGPU takes a CPU adapter only if those ids are SwiftShader's (webgpu_decoder_impl.cc, CreatePreferredAdapter:
// an adapter must import external images, which lavapipe cannot, or be SwiftShader). Nothing else is changed:
// the features, limits and every call are lavapipe's own. Loaded as an implicit layer only where its manifest's
// enable_environment variable is set, so no other Vulkan program on the machine sees it.
#include <string.h>
#include <vulkan/vulkan.h>
#include <vulkan/vk_layer.h>

#define EXPORT __attribute__((visibility("default")))

static PFN_vkGetInstanceProcAddr next_gipa;
static PFN_vkGetPhysicalDeviceProperties next_props;
static PFN_vkGetPhysicalDeviceProperties2 next_props2;
static PFN_vkGetPhysicalDeviceProperties2 next_props2khr;

static void as_swiftshader(VkPhysicalDeviceProperties *p) {
  if (strstr(p->deviceName, "llvmpipe")) {
    p->vendorID = 0x1AE0;
    p->deviceID = 0xC0DE;
  }
}

static VKAPI_ATTR void VKAPI_CALL props(VkPhysicalDevice d, VkPhysicalDeviceProperties *p) {
  next_props(d, p);
  as_swiftshader(p);
}

static VKAPI_ATTR void VKAPI_CALL props2(VkPhysicalDevice d, VkPhysicalDeviceProperties2 *p) {
  next_props2(d, p);
  as_swiftshader(&p->properties);
}

static VKAPI_ATTR void VKAPI_CALL props2khr(VkPhysicalDevice d, VkPhysicalDeviceProperties2 *p) {
  next_props2khr(d, p);
  as_swiftshader(&p->properties);
}

static VKAPI_ATTR VkResult VKAPI_CALL create_instance(const VkInstanceCreateInfo *info,
                                                      const VkAllocationCallbacks *alloc, VkInstance *instance) {
  VkLayerInstanceCreateInfo *link = (VkLayerInstanceCreateInfo *)info->pNext;
  while (link && !(link->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO && link->function == VK_LAYER_LINK_INFO))
    link = (VkLayerInstanceCreateInfo *)link->pNext;
  if (!link) return VK_ERROR_INITIALIZATION_FAILED;
  next_gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
  link->u.pLayerInfo = link->u.pLayerInfo->pNext;  // the next layer's link, for the call below
  PFN_vkCreateInstance next_create = (PFN_vkCreateInstance)next_gipa(NULL, "vkCreateInstance");
  VkResult result = next_create(info, alloc, instance);
  if (result != VK_SUCCESS) return result;
  next_props = (PFN_vkGetPhysicalDeviceProperties)next_gipa(*instance, "vkGetPhysicalDeviceProperties");
  next_props2 = (PFN_vkGetPhysicalDeviceProperties2)next_gipa(*instance, "vkGetPhysicalDeviceProperties2");
  next_props2khr = (PFN_vkGetPhysicalDeviceProperties2)next_gipa(*instance, "vkGetPhysicalDeviceProperties2KHR");
  return VK_SUCCESS;
}

EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL gvc_GetInstanceProcAddr(VkInstance instance, const char *name) {
  if (!strcmp(name, "vkCreateInstance")) return (PFN_vkVoidFunction)create_instance;
  if (!strcmp(name, "vkGetInstanceProcAddr")) return (PFN_vkVoidFunction)gvc_GetInstanceProcAddr;
  if (!strcmp(name, "vkGetPhysicalDeviceProperties")) return (PFN_vkVoidFunction)props;
  if (!strcmp(name, "vkGetPhysicalDeviceProperties2")) return next_props2 ? (PFN_vkVoidFunction)props2 : NULL;
  if (!strcmp(name, "vkGetPhysicalDeviceProperties2KHR")) return next_props2khr ? (PFN_vkVoidFunction)props2khr : NULL;
  return next_gipa ? next_gipa(instance, name) : NULL;
}

EXPORT VKAPI_ATTR VkResult VKAPI_CALL vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v) {
  if (v->loaderLayerInterfaceVersion > 2) v->loaderLayerInterfaceVersion = 2;
  v->pfnGetInstanceProcAddr = gvc_GetInstanceProcAddr;
  v->pfnGetDeviceProcAddr = NULL;  // no device call is changed
  v->pfnGetPhysicalDeviceProcAddr = NULL;
  return VK_SUCCESS;
}
