{
  "targets": [
    {
      "target_name": "socket_options",
      "sources": ["socket_options.c"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
