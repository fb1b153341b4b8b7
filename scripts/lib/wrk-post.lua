-- wrk-post.lua — an empty POST (scripts/bench-http.sh's PEER join: the peer
-- takes no body and no user).
wrk.method = "POST"
