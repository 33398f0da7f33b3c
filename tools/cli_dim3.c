/// @file cli_dim3.c
/// The subcommands for 3D scenes: cli_dim.inc and cli_dim_cmd.inc over the octree (ort3_*).
#include "cli.h"

#define CLI_DIM 3
#include "cli_dim.inc"
#include "cli_dim_cmd.inc"
