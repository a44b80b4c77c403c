from glob import glob

from setuptools import find_packages, setup

package_name = "spin_decoupler_ros"
# launch/ and config/ are the package's own (the workspace's top-level folders link to
# them), so the package builds wherever it is copied.

setup(
    name=package_name,
    version="0.2.0",
    packages=find_packages(exclude=["test"]),
    package_data={
        package_name: ["fastdds_profile.xml", "fastdds_localhost.xml", "fastrtps_profile.xml", "fastrtps_localhost.xml"]
    },
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{package_name}"]),
        (f"share/{package_name}", ["package.xml"]),
        (f"share/{package_name}/launch", glob("launch/*.launch.py")),
        (f"share/{package_name}/config", glob("config/*.yaml")),
    ],
    install_requires=["setuptools"],
    extras_require={"test": ["pytest"]},  # (colcon test runs test/ with pytest)
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
