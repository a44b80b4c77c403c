from glob import glob

from setuptools import find_packages, setup

package_name = "franka_agent"
# launch/ and config/ are the package's own (the workspace's top-level folders link to
# them), so the package builds wherever it is copied.

setup(
    name=package_name,
    version="0.2.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{package_name}"]),
        (f"share/{package_name}", ["package.xml"]),
        (f"share/{package_name}/launch", glob("launch/*.launch.py")),
        (f"share/{package_name}/config", glob("config/*.yaml") + glob("config/*.csv")),
        (f"share/{package_name}/config/robots", glob("config/robots/*.yaml")),
    ],
    install_requires=["setuptools"],
    extras_require={"test": ["pytest"]},  # (colcon test runs test/ with pytest)
    zip_safe=True,
    maintainer="spin_decoupler maintainers",
    maintainer_email="maintainers@spin-decoupler.dev",
    description="Panda agent, MuJoCo mock hardware and reach training for spin_decoupler.",
    license="GPL-3.0-only",
    entry_points={
        "console_scripts": [
            "panda_agent = franka_agent.panda_agent_node:main",
            "mock_hardware = franka_agent.mock.mock_hardware_node:main",
            "panda_trainer = franka_agent.train:main",
            "panda_pipeline = franka_agent.pipeline:main",
            "sim_panda = franka_agent.sim_robot:main",
        ],
    },
)
