// Placeholder: loop compression is being written (issue 3).
#include "compress/compress.h"
