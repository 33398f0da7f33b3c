// quickstart.c: the README's example — store boxes, find what overlaps.
#include <orthant/orthant2.h>
#include <stdio.h>

static bool print_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ctx, (void)a, (void)b;
	printf("%s touches %s\n", (const char *)ua, (const char *)ub);
	return true; // keep going
}

int main(void)
{
	ort2_tree_def def = ort2_tree_default_def();
	ort2_tree *tree;
	if (ort2_tree_create(&def, &tree) != ORT_OK) return 1;
	ort_handle ship;
	ort2_tree_insert(tree, (ort2_box){{0, 0}, {10, 10}}, "ship", &ship);
	ort2_tree_insert(tree, (ort2_box){{8, 8}, {12, 12}}, "rock", NULL);
	ort2_tree_insert(tree, (ort2_box){{50, 50}, {60, 60}}, "moon", NULL);
	ort2_tree_find_pairs(tree, ORT_MASK_ALL, print_pair, NULL);        // ship touches rock
	ort2_tree_move(tree, ship, (ort2_box){{45, 45}, {55, 55}}); // fly to the moon
	ort2_tree_find_pairs(tree, ORT_MASK_ALL, print_pair, NULL);        // moon touches ship
	ort2_tree_destroy(tree);
	return 0;
}
