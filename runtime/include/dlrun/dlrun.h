// dlrun public API, all of it: #include <dlrun/dlrun.h>. docs/library.md.
#pragma once

#include "dlrun/log.h"
#include "dlrun/options.h"
#include "dlrun/result.h"
#include "dlrun/runtime.h"
#include "dlrun/session.h"
#include "dlrun/types.h"
#include "dlrun/version.h"
