// Placeholder: the merge is being written (issue 3).
#include "merge/merge.h"
