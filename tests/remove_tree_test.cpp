// remove_tree (files/remove_tree.h) stands in for std::filesystem::remove_all in every process
// that may link LibTorch: it removes a whole tree, never follows a link out of it, and a missing
// path is not an error.
#include "files/remove_tree.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

namespace fs = std::filesystem;

TEST(RemoveTree, RemovesATreeButNotWhatItsLinksPointTo) {
  const fs::path base =
      fs::temp_directory_path() / ("overlapsim-remove-tree-" + std::to_string(::getpid()));
  const fs::path tree = base / "tree", outside = base / "outside";
  fs::create_directories(tree / "a" / "b");
  fs::create_directories(outside);
  std::ofstream(tree / "a" / "b" / "file") << "x";
  std::ofstream(tree / "top") << "y";
  std::ofstream(outside / "keep") << "z";
  fs::create_directory_symlink(outside, tree / "a" / "link");

  EXPECT_TRUE(overlapsim::remove_tree(tree.string()));
  EXPECT_FALSE(fs::exists(tree));
  EXPECT_TRUE(fs::exists(outside / "keep"));           // the link went, not its target's contents
  EXPECT_TRUE(overlapsim::remove_tree(tree.string())); // gone already: nothing to do

  std::ofstream(base / "plain") << "w"; // a plain file is removed too
  EXPECT_TRUE(overlapsim::remove_tree((base / "plain").string()));
  EXPECT_FALSE(fs::exists(base / "plain"));
  EXPECT_TRUE(overlapsim::remove_tree(base.string()));
  EXPECT_FALSE(fs::exists(base));
}
