#include "common/settings.h"

namespace gavel::settings {

Settings& Current() {
  static Settings s;
  return s;
}

}  // namespace gavel::settings
