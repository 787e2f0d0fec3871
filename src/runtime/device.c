/* Backend-independent device helpers. */
#include "runtime/device.h"

void cj_device_destroy(cj_device *d) {
  if (d && d->ops && d->ops->destroy) d->ops->destroy(d);
}
