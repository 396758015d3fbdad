//===- OptionsBinder.h - one declaration for a flag and a pass option -*- C++ -*-===//
//
// Each phase's options struct declares its options once, in a
// `bindOptions(OptionsBinder &)` member that names every field with its flag
// name and help; the struct's member initializers are the only defaults.
// The same function binds the fields to `dlc`'s command-line flags
// (OptionsBinder::global) and to the options of a registered pass pipeline
// or pass (BoundOptions, for `dlc-opt --dlc-pipeline="train=true lr=0.1"`).
// IREE's OptionsBinder (compiler/src/iree/compiler/Utils/OptionUtils.h)
// does the same for its sessions; this one is written for dlc.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_COMPILER_SUPPORT_OPTIONSBINDER_H
#define DLC_COMPILER_SUPPORT_OPTIONSBINDER_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace dlc {

/// Binds option fields either to global command-line flags or to the
/// options of a pass or pipeline. Help texts may contain "{default}", which
/// is replaced by the field's value when it is bound (its default).
class OptionsBinder {
public:
  /// Binds every field to a flag `--NAME` in |category|. The flags live as
  /// long as the binder; the bound fields must outlive it.
  static OptionsBinder global(llvm::cl::OptionCategory &category) {
    OptionsBinder b;
    b.category = &category;
    return b;
  }

  /// Binds every field to an option of |parent| (a pass's or pipeline's
  /// options); commit() copies the parsed values into the fields.
  static OptionsBinder local(mlir::detail::PassOptions &parent) {
    OptionsBinder b;
    b.parent = &parent;
    return b;
  }

  /// Binds every field to an option of |pass| (what `dlc-opt
  /// --PASS="NAME=VALUE"` sets and the textual pipeline prints); commit()
  /// copies the parsed values into the fields.
  static OptionsBinder forPass(mlir::Pass &pass) {
    OptionsBinder b;
    b.pass = &pass;
    return b;
  }

  /// Whether the fields become `dlc`'s flags (and not a pass's or
  /// pipeline's options); options that only a pass takes bind when false.
  bool isGlobal() const { return category != nullptr; }

  OptionsBinder(OptionsBinder &&) = default;
  OptionsBinder &operator=(OptionsBinder &&) = default;

  /// Binds |value| to option |name|. |mods| are further llvm::cl modifiers
  /// (cl::value_desc, cl::values, ...).
  template <typename T, typename... Mods>
  void opt(llvm::StringRef name, T &value, llvm::StringRef help,
           Mods &&...mods) {
    std::string desc = withDefault(help, value);
    if (category) {
      auto o = std::make_unique<llvm::cl::opt<T, /*ExternalStorage=*/true>>(
          name, llvm::cl::location(value), llvm::cl::desc(keep(desc)),
          llvm::cl::cat(*category), std::forward<Mods>(mods)...);
      owned.push_back(std::move(o));
      return;
    }
    if (pass) {
      using Option = mlir::Pass::Option<T>;
      auto o = std::make_unique<Option>(*pass, name,
                                        llvm::cl::desc(keep(desc)),
                                        llvm::cl::init(value),
                                        std::forward<Mods>(mods)...);
      Option *raw = o.get();
      writers.push_back([raw, &value] { value = *raw; });
      owned.push_back(std::move(o));
      return;
    }
    using Option = mlir::detail::PassOptions::Option<T>;
    auto o = std::make_unique<Option>(*parent, name,
                                      llvm::cl::desc(keep(desc)),
                                      llvm::cl::init(value),
                                      std::forward<Mods>(mods)...);
    Option *raw = o.get();
    writers.push_back([raw, &value] { value = *raw; });
    owned.push_back(std::move(o));
  }

  /// Binds |values| to the repeatable option |name| (comma-separated in a
  /// pass option; repeated or comma-separated with cl::CommaSeparated as a
  /// flag).
  template <typename... Mods>
  void list(llvm::StringRef name, std::vector<std::string> &values,
            llvm::StringRef help, Mods &&...mods) {
    if (category) {
      auto o = std::make_unique<
          llvm::cl::list<std::string, std::vector<std::string>>>(
          name, llvm::cl::location(values), llvm::cl::desc(keep(help.str())),
          llvm::cl::cat(*category), std::forward<Mods>(mods)...);
      owned.push_back(std::move(o));
      return;
    }
    if (pass) {
      using Option = mlir::Pass::ListOption<std::string>;
      auto o = std::make_unique<Option>(*pass, name,
                                        llvm::cl::desc(keep(help.str())));
      Option *raw = o.get();
      writers.push_back([raw, &values] {
        if (raw->hasValue())
          values.assign(raw->begin(), raw->end());
      });
      owned.push_back(std::move(o));
      return;
    }
    using Option = mlir::detail::PassOptions::ListOption<std::string>;
    auto o = std::make_unique<Option>(*parent, name,
                                      llvm::cl::desc(keep(help.str())));
    Option *raw = o.get();
    writers.push_back([raw, &values] {
      if (raw->hasValue())
        values.assign(raw->begin(), raw->end());
    });
    owned.push_back(std::move(o));
  }

  /// Local binders: copies the parsed option values into the fields.
  void commit() const {
    for (const auto &w : writers)
      w();
  }

  /// |v| as the help texts write numbers: "0.01", "1e-8".
  static std::string formatNumber(double v) {
    std::string s;
    llvm::raw_string_ostream(s) << llvm::format("%g", v);
    for (const char *exp : {"e-0", "e+0"})
      if (size_t at = s.find(exp); at != std::string::npos)
        s.erase(at + 2, 1);
    return s;
  }

private:
  OptionsBinder() = default;

  template <typename T>
  static std::string withDefault(llvm::StringRef help, const T &value) {
    size_t at = help.find("{default}");
    if (at == llvm::StringRef::npos)
      return help.str();
    std::string shown;
    if constexpr (std::is_floating_point_v<T>)
      shown = formatNumber(value);
    else if constexpr (std::is_same_v<T, bool>)
      shown = value ? "true" : "false";
    else if constexpr (std::is_integral_v<T>)
      shown = std::to_string(value);
    else if constexpr (std::is_convertible_v<T, std::string>)
      shown = std::string(value);
    return (help.take_front(at) + shown +
            help.drop_front(at + llvm::StringRef("{default}").size()))
        .str();
  }

  /// llvm::cl keeps the StringRef of a description, not a copy.
  llvm::StringRef keep(std::string text) {
    texts.push_back(std::make_unique<std::string>(std::move(text)));
    return *texts.back();
  }

  llvm::cl::OptionCategory *category = nullptr;
  mlir::detail::PassOptions *parent = nullptr;
  mlir::Pass *pass = nullptr;
  std::vector<std::unique_ptr<llvm::cl::Option>> owned;
  std::vector<std::unique_ptr<std::string>> texts;
  std::vector<std::function<void()>> writers;
};

/// The options of a pass pipeline or pass whose fields are an options
/// struct |T| (with `void bindOptions(OptionsBinder &)`): MLIR parses the
/// textual options ("train=true lr=0.1") into the bound options, and get()
/// returns |T| with them applied over T's defaults. For
/// mlir::PassPipelineRegistration<BoundOptions<T>>.
template <typename T>
class BoundOptions : public mlir::PassPipelineOptions<BoundOptions<T>> {
public:
  BoundOptions() : binder(OptionsBinder::local(*this)) {
    values.bindOptions(binder);
  }
  /// The struct with the parsed options applied.
  const T &get() const {
    binder.commit();
    return values;
  }

private:
  mutable T values;
  OptionsBinder binder;
};

/// A pass whose options are its phase's options struct |T| (with
/// `void bindOptions(OptionsBinder &)` and `std::string check() const`):
/// derive the pass from `PassWithOptions<impl::NamePassBase<NamePass>, T>`
/// and write `using PassWithOptions::PassWithOptions;`. The pass reads T's
/// fields by name; its options are T's, under the names of `dlc`'s flags,
/// bound by T's one bindOptions. Call commitAndCheckOptions() at the start
/// of runOnOperation to apply and check what `dlc-opt --PASS="NAME=VALUE"`
/// parsed. A copy (MLIR clones passes) binds again; MLIR then copies the
/// option values over.
template <typename PassBase, typename T>
class PassWithOptions : public PassBase, public T {
public:
  /// The pass with |options| as its options' values.
  PassWithOptions(const T &options = T())
      : T(options), binder(OptionsBinder::forPass(*this)) {
    T::bindOptions(binder);
  }
  PassWithOptions(const PassWithOptions &other)
      : PassBase(other), T(other), binder(OptionsBinder::forPass(*this)) {
    T::bindOptions(binder);
  }

protected:
  /// Copies the parsed option values into T's fields, then runs T::check(),
  /// the phase's one validation of these values (the one `dlc` runs): its
  /// problem is emitted at |op| as "--PASS: PROBLEM" and fails.
  mlir::LogicalResult commitAndCheckOptions(mlir::Operation *op) {
    binder.commit();
    std::string problem = T::check();
    if (problem.empty())
      return mlir::success();
    return op->emitError() << "--" << this->getArgument() << ": " << problem;
  }

private:
  OptionsBinder binder;
};

} // namespace dlc

#endif // DLC_COMPILER_SUPPORT_OPTIONSBINDER_H
