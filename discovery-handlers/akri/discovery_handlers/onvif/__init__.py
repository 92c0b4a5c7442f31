"""onvif: IP cameras found by WS-Discovery, checked and described over ONVIF SOAP."""
