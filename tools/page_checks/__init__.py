"""The book and the chapters read as a reader reads them, in headless Chromium (Playwright): one checker, two targets.

``python -m tools.page_checks book [HTML_DIR]`` opens every page of the built book (default ``book/_build/html``);
``python -m tools.page_checks lab [FOLDER]`` opens every notebook of a folder (default ``runs/default/executed``)
in a real JupyterLab. Each lists, per page or notebook, what a reader would see wrong, and saves screenshots.

===================  ===========================================================================================
module               responsibility
===================  ===========================================================================================
``core``             Chromium and a page with its console; problems, reports, link problems; the exit status
``book_pages``       the built HTML book: overflow, clipping, math left as TeX, images, links and anchors
``lab``              the notebooks in JupyterLab: raw MyST, visible or unreachable solutions, kernels, inputs
``lab_server``       the JupyterLab server the Lab check opens the notebooks in
``notebook_source``  what the Lab check reads from a notebook's source: solutions, raw markup, glued values
``__main__``         the command line
===================  ===========================================================================================
"""
