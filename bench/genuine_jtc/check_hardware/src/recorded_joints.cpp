// RecordedJoints: the arm behind the genuine joint_trajectory_controller in bench/genuine_jtc.
//
// Each joint has one command interface, position or effort, and the state interfaces
// position and velocity. A position command is taken exactly (the arm is where it was told,
// its velocity the difference quotient); an effort command accelerates the joint's
// inertia, gravity compensated as Franka's torque interface is, against a viscous damping.
// Every write() appends one row to the file named by the hardware parameter "record":
// float64 [time_s, period_s, positions..., velocities..., commands...], so what the
// hardware was commanded is known at every controller update, none dropped. The period is
// the loop's measured period, the one the controllers advance their trajectories by (the
// time given to write() is read later in the loop): bench/genuine_jtc.py times the
// commands by its sum.

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "hardware_interface/system_interface.hpp"
#include "hardware_interface/types/hardware_interface_return_values.hpp"
#include "hardware_interface/types/hardware_interface_type_values.hpp"
#include "pluginlib/class_list_macros.hpp"
#include "rclcpp/rclcpp.hpp"

namespace spin_decoupler_check_hardware
{
using hardware_interface::CallbackReturn;
using hardware_interface::return_type;

class RecordedJoints : public hardware_interface::SystemInterface
{
public:
  CallbackReturn on_init(const hardware_interface::HardwareComponentInterfaceParams & params) override
  {
    if (SystemInterface::on_init(params) != CallbackReturn::SUCCESS) {
      return CallbackReturn::ERROR;
    }
    const auto & info = get_hardware_info();
    const auto record = info.hardware_parameters.find("record");
    if (record == info.hardware_parameters.end() || record->second.empty()) {
      RCLCPP_ERROR(get_logger(), "the hardware parameter 'record' (the file to write) is missing");
      return CallbackReturn::ERROR;
    }
    record_path_ = record->second;
    for (const auto & joint : info.joints) {
      if (joint.command_interfaces.size() != 1) {
        RCLCPP_ERROR(get_logger(), "joint '%s' needs exactly one command interface", joint.name.c_str());
        return CallbackReturn::ERROR;
      }
      const auto & mode = joint.command_interfaces[0].name;
      if (mode != hardware_interface::HW_IF_POSITION && mode != hardware_interface::HW_IF_EFFORT) {
        RCLCPP_ERROR(get_logger(), "joint '%s': command interface '%s' is neither position nor effort",
          joint.name.c_str(), mode.c_str());
        return CallbackReturn::ERROR;
      }
      efforts_.push_back(mode == hardware_interface::HW_IF_EFFORT);
      inertias_.push_back(parameter(joint.parameters, "inertia", 1.0));
      dampings_.push_back(parameter(joint.parameters, "damping", 0.0));
      double start = 0.0;
      for (const auto & state : joint.state_interfaces) {
        if (state.name == hardware_interface::HW_IF_POSITION && !state.initial_value.empty()) {
          start = std::stod(state.initial_value);
        }
      }
      names_.push_back(joint.name);
      positions_.push_back(start);
    }
    velocities_.assign(names_.size(), 0.0);
    commands_.assign(names_.size(), std::numeric_limits<double>::quiet_NaN());
    return CallbackReturn::SUCCESS;
  }

  CallbackReturn on_configure(const rclcpp_lifecycle::State &) override
  {
    file_ = std::fopen(record_path_.c_str(), "wb");
    if (file_ == nullptr) {
      RCLCPP_ERROR(get_logger(), "cannot write the record '%s'", record_path_.c_str());
      return CallbackReturn::ERROR;
    }
    for (size_t j = 0; j < names_.size(); ++j) {
      set_state(names_[j] + "/" + hardware_interface::HW_IF_POSITION, positions_[j]);
      set_state(names_[j] + "/" + hardware_interface::HW_IF_VELOCITY, 0.0);
      set_command(names_[j] + "/" + command_interface(j), std::numeric_limits<double>::quiet_NaN());
    }
    return CallbackReturn::SUCCESS;
  }

  CallbackReturn on_cleanup(const rclcpp_lifecycle::State &) override
  {
    close();
    return CallbackReturn::SUCCESS;
  }

  CallbackReturn on_shutdown(const rclcpp_lifecycle::State &) override
  {
    close();
    return CallbackReturn::SUCCESS;
  }

  return_type read(const rclcpp::Time &, const rclcpp::Duration & period) override
  {
    const double dt = period.seconds();
    for (size_t j = 0; j < names_.size(); ++j) {
      const double command = commands_[j];
      if (std::isfinite(command) && dt > 0.0) {
        if (efforts_[j]) {
          // semi-implicit Euler: stable for the profiles' damping gains at 1 kHz
          velocities_[j] += dt * (command - dampings_[j] * velocities_[j]) / inertias_[j];
          positions_[j] += dt * velocities_[j];
        } else {
          velocities_[j] = (command - positions_[j]) / dt;
          positions_[j] = command;
        }
      } else {
        velocities_[j] = 0.0;  // no command yet (no controller active): held where it is
      }
      set_state(names_[j] + "/" + hardware_interface::HW_IF_POSITION, positions_[j]);
      set_state(names_[j] + "/" + hardware_interface::HW_IF_VELOCITY, velocities_[j]);
    }
    return return_type::OK;
  }

  return_type write(const rclcpp::Time & time, const rclcpp::Duration & period) override
  {
    row_.clear();
    row_.push_back(time.seconds());
    row_.push_back(period.seconds());
    row_.insert(row_.end(), positions_.begin(), positions_.end());
    row_.insert(row_.end(), velocities_.begin(), velocities_.end());
    for (size_t j = 0; j < names_.size(); ++j) {
      commands_[j] = get_command(names_[j] + "/" + command_interface(j));
      row_.push_back(commands_[j]);
    }
    if (file_ != nullptr) {
      std::fwrite(row_.data(), sizeof(double), row_.size(), file_);
      std::fflush(file_);  // whole rows on disk, however the controller manager ends
    }
    return return_type::OK;
  }

  ~RecordedJoints() override { close(); }

private:
  static double parameter(
    const std::unordered_map<std::string, std::string> & parameters, const std::string & name,
    double fallback)
  {
    const auto found = parameters.find(name);
    return found == parameters.end() ? fallback : std::stod(found->second);
  }

  std::string command_interface(size_t joint) const
  {
    return efforts_[joint] ? hardware_interface::HW_IF_EFFORT : hardware_interface::HW_IF_POSITION;
  }

  void close()
  {
    if (file_ != nullptr) {
      std::fclose(file_);
      file_ = nullptr;
    }
  }

  std::string record_path_;
  std::FILE * file_ = nullptr;
  std::vector<std::string> names_;
  std::vector<bool> efforts_;
  std::vector<double> inertias_, dampings_, positions_, velocities_, commands_, row_;
};

}  // namespace spin_decoupler_check_hardware

PLUGINLIB_EXPORT_CLASS(
  spin_decoupler_check_hardware::RecordedJoints, hardware_interface::SystemInterface)
