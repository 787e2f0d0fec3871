/* Status assertions for the public-API tests (cmocka): the call's status, and
 * for failures a substring of convjit_last_error() that names field and value. */
#ifndef CJ_TESTS_HOST_API_EXPECT_H
#define CJ_TESTS_HOST_API_EXPECT_H

#define EXPECT(call, st, needle)                                                                          \
  do {                                                                                                    \
    convjit_status s_ = (call);                                                                           \
    if (s_ != (st)) fail_msg("%s: status %d, expected %d (%s)", #call, s_, (st), convjit_last_error());   \
    if (!strstr(convjit_last_error(), (needle)))                                                          \
      fail_msg("%s: error text \"%s\" lacks \"%s\"", #call, convjit_last_error(), (needle));               \
  } while (0)
#define OK(call)                                                                                          \
  do {                                                                                                    \
    convjit_status s_ = (call);                                                                           \
    if (s_ != CONVJIT_OK) fail_msg("%s: %s: %s", #call, convjit_status_string(s_), convjit_last_error()); \
  } while (0)

#endif
