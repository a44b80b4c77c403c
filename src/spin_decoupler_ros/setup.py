from setuptools import find_packages, setup

package_name = "spin_decoupler_ros"
# The workspace keeps launch/ and config/ at its top (the design card); install ours
# into this package's share so `ros2 launch spin_decoupler_ros ...` finds them.
WORKSPACE = "../.."
EXAMPLES = ("first_order_plant", "lunar_lander")

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    package_data={package_name: ["fastdds_profile.xml", "fastdds_localhost.xml"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{package_name}"]),
        (f"share/{package_name}", ["package.xml"]),
        (f"share/{package_name}/launch", [f"{WORKSPACE}/launch/{name}.launch.py" for name in EXAMPLES]),
        (f"share/{package_name}/config", [f"{WORKSPACE}/config/{name}.yaml" for name in EXAMPLES]),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="spin_decoupler maintainers",
    maintainer_email="maintainers@spin-decoupler.dev",
    description="Decouple an RL learner from a robot's control loop over ROS 2.",
    license="GPL-3.0-only",
    entry_points={
        "console_scripts": [
            "first_order_plant_agent = spin_decoupler_ros.examples.first_order_plant.agent:main",
            "first_order_plant_train = spin_decoupler_ros.examples.first_order_plant.train:main",
            "lunar_lander_agent = spin_decoupler_ros.examples.lunar_lander.agent:main",
            "lunar_lander_train = spin_decoupler_ros.examples.lunar_lander.train:main",
            "skeleton_agent = spin_decoupler_ros.skeletons.skeleton_agent:main",
            "skeleton_env = spin_decoupler_ros.skeletons.skeleton_env:main",
        ],
    },
)
