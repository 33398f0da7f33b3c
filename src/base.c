// base.c: what every dimension shares — result and placement names.
#include "orthant/base.h"

const char *ort_result_string(ort_result result)
{
	switch (result) {
	case ORT_OK: return "ORT_OK";
	case ORT_ERROR_INVALID_ARGUMENT: return "ORT_ERROR_INVALID_ARGUMENT";
	case ORT_ERROR_INVALID_BOX: return "ORT_ERROR_INVALID_BOX";
	case ORT_ERROR_OUT_OF_RANGE: return "ORT_ERROR_OUT_OF_RANGE";
	case ORT_ERROR_STALE_HANDLE: return "ORT_ERROR_STALE_HANDLE";
	case ORT_ERROR_OUT_OF_MEMORY: return "ORT_ERROR_OUT_OF_MEMORY";
	case ORT_ERROR_CAPACITY: return "ORT_ERROR_CAPACITY";
	case ORT_ERROR_CORRUPT: return "ORT_ERROR_CORRUPT";
	case ORT_ERROR_BUSY: return "ORT_ERROR_BUSY";
	case ORT_RESULT_COUNT: break;
	}
	return "ORT_ERROR_UNKNOWN";
}

const char *ort_placement_string(ort_placement placement)
{
	switch (placement) {
	case ORT_PLACEMENT_LOOSE: return "loose";
	case ORT_PLACEMENT_TIGHT: return "tight";
	case ORT_PLACEMENT_LEAVES: return "leaves";
	case ORT_PLACEMENT_COUNT: break;
	}
	return "unknown";
}
