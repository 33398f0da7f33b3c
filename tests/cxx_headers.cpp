// cxx_headers.cpp: the public headers compile as C++ and link from C++.
#include <orthant/orthant.h>

int main()
{
	ort3_tree_def def = ort3_tree_default_def();
	ort3_tree *tree = nullptr;
	if (ort3_tree_create(&def, &tree) != ORT_OK) return 1;
	ort3_box box = {{0, 0, 0}, {1, 1, 1}};
	ort_handle h;
	bool ok = ort3_tree_insert(tree, box, nullptr, &h) == ORT_OK && ort3_tree_count(tree) == 1;
	ort3_tree_destroy(tree);
	return ok ? 0 : 1;
}
