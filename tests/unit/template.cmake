# Templates (agent/template/): C unit tests, and the differential test that
# renders every case in tests/template/cases with Python's jinja2 and with
# mini's engine and requires identical bytes (or an error from both).
mini_c_test(test_template SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_template.c
            LIBS miniagent_template LABELS unit)

add_executable(render_template ${PROJECT_SOURCE_DIR}/tests/template/render.c)
target_link_libraries(render_template PRIVATE miniagent_template)

find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME template_differential
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/template/diff.py
            $<TARGET_FILE:render_template>)
  set_tests_properties(template_differential PROPERTIES LABELS "unit" TIMEOUT 300
                       SKIP_RETURN_CODE 77)
  # Templates generated from a grammar of the subset (fixed seed), likewise
  # compared with jinja2.
  add_test(NAME template_random_differential
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/template/random_diff.py
            $<TARGET_FILE:render_template> --seed 1 --count 1000)
  set_tests_properties(template_random_differential PROPERTIES LABELS "unit" TIMEOUT 600
                       SKIP_RETURN_CODE 77)
endif()
