#include "runnel/runnel.h"
