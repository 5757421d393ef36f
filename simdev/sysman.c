/* sysman.c - the zes (sysman) device and PCI queries a tool uses for device attributes. */
#include <stdio.h>
#include <string.h>

#include "pa_sd_internal.h"

ze_result_t pa_sd_zesDeviceGetProperties(zes_device_handle_t h, zes_device_properties_t *p)
{
    pa_sd_device *dev = pa_sd_device_of((ze_device_handle_t)h);
    if (!dev)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->core.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
    p->core.pNext = NULL;
    pa_sd_device_fill_props(dev, &p->core);
    p->numSubdevices = 0;
    snprintf(p->serialNumber, sizeof p->serialNumber, "SD%08u", 1000 + dev->index);
    snprintf(p->boardNumber, sizeof p->boardNumber, "SIMDEV-BOARD-%u", dev->index);
    snprintf(p->brandName, sizeof p->brandName, "SimDev");
    snprintf(p->modelName, sizeof p->modelName, SIMDEV_DEVICE_NAME_FMT, dev->index);
    snprintf(p->vendorName, sizeof p->vendorName, "profagent simdev");
    snprintf(p->driverVersion, sizeof p->driverVersion, "1.0.0");
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zesDevicePciGetProperties(zes_device_handle_t h, zes_pci_properties_t *p)
{
    pa_sd_device *dev = pa_sd_device_of((ze_device_handle_t)h);
    if (!dev)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    pa_sd_device_pci(dev, &p->address);
    p->maxSpeed.gen = 4;
    p->maxSpeed.width = 16;
    p->maxSpeed.maxBandwidth = 31500000000ll; /* bytes/s, PCIe 4.0 x16 */
    p->haveBandwidthCounters = 0;
    p->havePacketCounters = 0;
    p->haveReplayCounters = 0;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zesDevicePciGetState(zes_device_handle_t h, zes_pci_state_t *s)
{
    if (!pa_sd_device_of((ze_device_handle_t)h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!s)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    s->status = ZES_PCI_LINK_STATUS_GOOD;
    s->qualityIssues = 0;
    s->stabilityIssues = 0;
    s->speed.gen = 4;
    s->speed.width = 16;
    s->speed.maxBandwidth = 31500000000ll;
    return ZE_RESULT_SUCCESS;
}

ze_result_t pa_sd_zesDevicePciGetBars(zes_device_handle_t h, uint32_t *pCount, zes_pci_bar_properties_t *p)
{
    (void)p;
    if (!pa_sd_device_of((ze_device_handle_t)h))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *pCount = 0;
    return ZE_RESULT_SUCCESS;
}
