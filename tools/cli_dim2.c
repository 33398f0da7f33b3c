/// @file cli_dim2.c
/// The subcommands for 2D scenes: cli_dim.inc and cli_dim_cmd.inc over the quadtree (ort2_*).
#include "cli.h"

#define CLI_DIM 2
#include "cli_dim.inc"
#include "cli_dim_cmd.inc"
