# Configuration loading (agent/config/: config.c, yaml_load.c).
mini_c_test(test_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_config.c
            LIBS miniagent_config LABELS unit)
set_tests_properties(test_config PROPERTIES
  ENVIRONMENT "MINI_CONFIG_DIR=${PROJECT_SOURCE_DIR}/agent/configs;MINI_TEST_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
# Differential tests against PyYAML, python-dotenv and Jinja2 (tests/config).
add_executable(config_tool ${PROJECT_SOURCE_DIR}/tests/config/config_tool.c)
target_link_libraries(config_tool PRIVATE miniagent_config)
add_test(NAME test_config_diff
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/config/run_diff.sh $<TARGET_FILE:config_tool> ${PROJECT_SOURCE_DIR})
set_tests_properties(test_config_diff PROPERTIES LABELS unit TIMEOUT 300
  ENVIRONMENT "MINI_CONFIG_DIR=${PROJECT_SOURCE_DIR}/agent/configs")
